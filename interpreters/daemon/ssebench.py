"""What each route of SSEBench's wire answers, over the daemon's `Service` (SPEC §9).

Interpreter layer. The service holds one state for both APIs; these functions give SSEBench's
clients the original daemon's replies and errors: its 403 texts, in its order (the agent phase,
then `grading: true`, then the difficulty level), 500 for a call that cannot run (an unknown
tool or action, a bad argument, a script or PoC the task does not have, a script that cannot
start, a patch that does not apply), and replies with its keys only. Each function blocks
(one action at a time); the routes call it from a worker thread.
"""

from __future__ import annotations

from typing import Any

from returns.result import Failure

from interpreters.daemon.service import Refused, Service
from interpreters.daemon.shell import ShellError
from ssegrade.protocol import (
    ACTIONS,
    BencherRequest,
    Listener,
    PrepareApplyFailed,
    PrepareCaptureFailed,
    WireDialog,
    WireDiff,
    WireFiles,
    WireMetadata,
    WireScriptResult,
    WireSuccess,
    dialog_entries,
    gate,
    parse_tool_call,
    resolve_poc,
    ssebench_refusal,
    unconfigured,
    wire_files,
    wire_metadata,
    wire_result,
    wire_script,
)

__all__ = [
    "agent_exited",
    "dialog",
    "diff",
    "files",
    "final_diff",
    "metadata",
    "prepare_grading",
    "reference_patch",
    "result",
    "tool",
]


def _text(data: bytes | None) -> str:
    return "" if data is None else data.decode("utf-8", "replace")


def metadata(service: Service) -> WireMetadata:
    """`GET /project`: the task, with its report files and build and test scripts as text."""
    task = service.task
    described = task.task_description
    paths = [p for p in (task.scripts.build, task.scripts.test) if p is not None]
    if described is not None:
        paths += described.crash_report
    texts = {path: service.task_text(path) for path in paths}
    return wire_metadata(task, service.folder, service.source, texts)


def _reworded(exc: Refused, action: str) -> Refused:
    """A service refusal in SSEBench's words: a gate's 403 its own text, a bad request 500."""
    if exc.reason is not None:
        return Refused(403, ssebench_refusal(exc.reason, action), exc.reason)
    if exc.status == 400:
        return Refused(500, f"invalid argument: {exc.message}")
    return exc


def tool(
    service: Service, listener: Listener, name: str, action: str, body: Any
) -> WireScriptResult:
    """`POST /tool/{name}?action={action}` with its JSON body: run a bencher action or a bash
    command, or refuse it as SSEBench's daemon does."""
    grading = isinstance(body, dict) and body.get("grading") is True
    gated = next((a for a in ACTIONS if a == action), None) if name == "bencher" else None
    refused = gate(service.level, listener, service.agent_phase, gated, grading)
    if refused is not None:
        raise Refused(403, ssebench_refusal(refused, action), refused)
    parsed = parse_tool_call(name, action, body)
    if isinstance(parsed, Failure):
        raise Refused(500, parsed.failure())
    call = parsed.unwrap()
    try:
        if call.tool == "bash":
            assert call.command is not None
            return wire_script(service.bash(listener, call.command))
        assert call.action is not None
        missing = unconfigured(service.task, call.action)
        if missing is not None:
            raise Refused(500, missing)
        poc = None
        if call.poc is not None:
            found = resolve_poc(service.task, service.folder, call.action, call.poc)
            if isinstance(found, Failure):
                raise Refused(500, f"not a PoC of this task: {call.poc}")
            poc = found.unwrap()
        request = BencherRequest(grading=call.grading, poc=poc)
        done = service.bencher(listener, call.action, request)
    except ShellError as exc:
        raise Refused(500, str(exc)) from None
    except Refused as exc:
        raise _reworded(exc, action) from None
    if done.not_started is not None:
        raise Refused(500, done.not_started)
    return wire_script(done)


def prepare_grading(service: Service, listener: Listener) -> WireSuccess:
    """`POST /prepare_grading` (admin only): `{"success": true}`, or 500 with git's message
    after `git apply failed: ` (what SSEBench's SDK tells an inapplicable patch by), or the
    capture's failure."""
    reply = service.prepare_grading(listener)
    if isinstance(reply, PrepareApplyFailed):
        raise Refused(500, f"git apply failed: {reply.log}")
    if isinstance(reply, PrepareCaptureFailed):
        raise Refused(500, reply.message)
    return WireSuccess()


def agent_exited(service: Service, listener: Listener) -> WireSuccess:
    """`POST /admin/agent_exited` (admin only): the agent phase is over."""
    service.agent_exited(listener)
    return WireSuccess()


def diff(service: Service, listener: Listener) -> WireDiff:
    """`GET /diff`: the live tree's patch as text (odd bytes as U+FFFD)."""
    return WireDiff(diff=service.diff(listener).diff)


def files(service: Service, listener: Listener) -> WireFiles:
    """`GET /files`: the paths the live patch changes, with line counts."""
    return wire_files(service.files(listener).files)


def result(service: Service) -> dict[str, Any]:
    """`GET /result`: `{"available": false}` until the grade can be read."""
    return wire_result(service.results_file("result.json"))


def final_diff(service: Service) -> WireDiff:
    """`GET /final_diff`: the patch `POST /prepare_grading` saved; empty before."""
    return WireDiff(diff=_text(service.results_file("final.patch")))


def reference_patch(service: Service, listener: Listener) -> WireDiff:
    """`GET /reference/patch`: the task's reference fix, empty when it has none; on an
    agent-facing listener only once the agent phase is over (403 before)."""
    service.after_agent(listener)
    return WireDiff(diff=_text(service.reference()))


def dialog(service: Service, since: int | None) -> WireDialog:
    """`GET /agent/dialog?since=N`: the dialog entries whose `seq` is above `since`."""
    text = _text(service.dialog())
    return WireDialog(entries=dialog_entries(text, -1 if since is None else since))
