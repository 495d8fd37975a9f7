"""SSEBench's tool calls (SPEC §9): reading `POST /tool/{name}?action=…` and its JSON body.

Pure core. What a call asks for (`parse_tool_call`), and why the task cannot run a bencher
action at all (`unconfigured`), in the original daemon's 500 texts. The gate (403) is
`ssegrade.protocol._rules.gate`; the replies are `ssegrade.protocol._wire`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from returns.result import Failure, Result, Success

from ssegrade.internal.checks import Action
from ssegrade.internal.task import Task
from ssegrade.protocol._difficulty import ACTIONS

__all__ = ["TOOLS", "ToolCall", "parse_tool_call", "unconfigured"]

TOOLS = ("bencher", "bash")
"""The tools of `POST /tool/{name}`."""


class ToolCall(BaseModel):
    """A tool call read from its body: a bencher action with its flag or PoC, or a command."""

    model_config = ConfigDict(defer_build=True, frozen=True)

    tool: Literal["bencher", "bash"]
    action: Action | None = None
    grading: bool = False
    poc: str | None = None
    command: str | None = None


def _field(body: object, name: str, kind: type, required: bool) -> Result[Any, str]:
    if not isinstance(body, dict):
        return Failure(f"invalid argument: invalid type: expected an object, got {_kind(body)}")
    if name not in body:
        if required:
            return Failure(f"invalid argument: missing field `{name}`")
        return Success(None)
    value = body[name]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        wanted = {bool: "a boolean", str: "a string"}.get(kind, kind.__name__)
        return Failure(f"invalid argument: invalid type: {_kind(value)}, expected {wanted}")
    return Success(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean `{str(value).lower()}`"
    if isinstance(value, int | float):
        return f"number {value}"
    if isinstance(value, str):
        return f'string "{value}"'
    return "a sequence" if isinstance(value, list) else "a map"


def parse_tool_call(tool: str, action: str, body: object) -> Result[ToolCall, str]:
    """Read `POST /tool/{tool}?action={action}` and its JSON body, or say why it cannot run
    (the original's 500 texts): an unknown tool or action, or an argument of the wrong shape.
    Keys the action does not read are ignored.

    >>> parse_tool_call("bencher", "run_poc", {"poc": "pocs/a"}).unwrap().poc
    'pocs/a'
    >>> parse_tool_call("bencher", "run_poc", {}).failure()
    'invalid argument: missing field `poc`'
    >>> parse_tool_call("bencher", "deploy", {}).failure()
    'invalid action: deploy'
    >>> parse_tool_call("shell", "x", {}).failure()
    'tool not found: shell'
    """
    if tool == "bash":
        command = _field(body, "command", str, required=True)
        if isinstance(command, Failure):
            return Failure(command.failure())
        return Success(ToolCall(tool="bash", command=command.unwrap()))
    if tool != "bencher":
        return Failure(f"tool not found: {tool}")
    if action not in ACTIONS:
        return Failure(f"invalid action: {action}")
    known: Action = next(a for a in ACTIONS if a == action)
    if known == "run_poc":
        poc = _field(body, "poc", str, required=True)
        if isinstance(poc, Failure):
            return Failure(poc.failure())
        return Success(ToolCall(tool="bencher", action=known, poc=poc.unwrap()))
    grading = _field(body, "grading", bool, required=False)
    if isinstance(grading, Failure):
        return Failure(grading.failure())
    return Success(ToolCall(tool="bencher", action=known, grading=bool(grading.unwrap())))


def unconfigured(task: Task, action: Action) -> str | None:
    """Why the task cannot run `action` at all (the original's 500 text), or None.

    >>> unconfigured(Task(id="t"), "intent_test")
    'intent_test not configured'
    >>> unconfigured(Task(id="t", scripts={"build": "b.sh"}), "build") is None
    True
    """
    scripts = task.scripts
    if action == "build" and scripts.build is None:
        return "build script not configured"
    if action == "run_poc" and scripts.run is None:
        return "run script not configured"
    if action == "intent_test" and task.files.future_test is None:
        return "intent_test not configured"
    if action in ("function_test", "intent_test") and scripts.test is None:
        return "test script not configured"
    return None
