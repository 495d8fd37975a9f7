"""The daemon protocol's rules (SPEC §9): who may call which action, which PoC a request
names, and what a listener may see of the task.

Pure core: the decisions of the API that need no I/O; the daemon's service applies them.
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Literal

from returns.result import Failure, Result, Success

from ssegrade.internal.bencher import task_path
from ssegrade.internal.checks import Action, Check, grading_order
from ssegrade.internal.task import Task
from ssegrade.protocol._difficulty import ACTIONS, Level, allowed
from ssegrade.protocol._documents import Capabilities, Listener, ProjectScripts, ProjectView

__all__ = [
    "ADMIN_ONLY",
    "AGENT_PHASE_OVER",
    "Refusal",
    "capabilities",
    "gate",
    "public_project",
    "refusal",
    "resolve_poc",
    "ssebench_refusal",
]

AGENT_PHASE_OVER = "the agent phase is over: the agent-facing tools are closed"
ADMIN_ONLY = "endpoint is only available on the admin socket"
"""SSEBench's 403 text for an admin-only endpoint reached on an agent-facing listener."""

Refusal = Literal["phase", "grading", "withheld"]
"""Why a tool call is refused on an agent-facing listener: the agent phase is over, it asks
for the grading session, or the difficulty level withholds the action."""


def _in_order(checks: frozenset[Check]) -> list[Check]:
    return [check.name for check in grading_order() if check.name in checks]


def gate(
    level: Level, listener: Listener, agent_phase: bool, action: Action | None, grading: bool
) -> Refusal | None:
    """Why a tool call is forbidden (403, SPEC §9), in the order SSEBench's daemon asks; None
    when it may run. `action` is None for a tool the level does not gate (`bash`).

    The admin listener may always call every action, on either session. An agent-facing
    listener may call only during the agent phase, never on the grading session, and only the
    actions its difficulty level allows.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> gate(LEVELS[4], "agent", True, None, False) is None
    True
    >>> gate(LEVELS[4], "agent", False, "build", True)
    'phase'
    """
    if listener == "admin":
        return None
    if not agent_phase:
        return "phase"
    if grading:
        return "grading"
    if action is not None and not allowed(level, action):
        return "withheld"
    return None


def ssebench_refusal(refused: Refusal, action: str) -> str:
    """SSEBench's 403 text for a refused tool call.

    >>> ssebench_refusal("withheld", "run_poc")
    "action 'run_poc' is not available at the current difficulty level"
    """
    match refused:
        case "phase":
            return "tools are unavailable after the agent phase"
        case "grading":
            return "grading checks are only available on the admin socket"
        case "withheld":
            return f"action '{action}' is not available at the current difficulty level"


def refusal(
    level: Level, listener: Listener, agent_phase: bool, action: Action | None, grading: bool
) -> str | None:
    """Why a bencher call is forbidden, in ssegrade's words (403 under `/ssegrade`); None
    when it may run (`gate` says which rule refuses it).

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> refusal(LEVELS[4], "admin", False, "build", True) is None
    True
    >>> refusal(LEVELS[2], "agent", True, "run_poc", False)
    'run_poc is not available at difficulty level 2 (NO_FUTURE_TEST)'
    >>> refusal(LEVELS[0], "agent", False, "build", False)
    'the agent phase is over: the agent-facing tools are closed'
    """
    match gate(level, listener, agent_phase, action, grading):
        case None:
            return None
        case "phase":
            return AGENT_PHASE_OVER
        case "grading":
            return "grading runs only through the admin socket"
        case "withheld":
            return f"{action} is not available at difficulty level {level.number} ({level.name})"


def resolve_poc(
    task: Task, folder: str, action: Action, poc: str | None
) -> Result[str | None, str]:
    """The config path of the PoC a bencher request names, or why the request is bad (400).

    `run_poc` needs a PoC the task names, given as its config path or as its absolute path in
    the task folder; a path with `..` is refused outright. Other actions take no PoC.

    >>> task = Task(id="t", scripts={"run": "run.sh"}, files={"poc": ["pocs/a.bin"]})
    >>> resolve_poc(task, "/ssebench", "run_poc", "/ssebench/pocs/a.bin").unwrap()
    'pocs/a.bin'
    >>> resolve_poc(task, "/ssebench", "run_poc", "./pocs/a.bin").unwrap()
    'pocs/a.bin'
    >>> resolve_poc(task, "/ssebench", "run_poc", "pocs/../pocs/a.bin").failure()
    "poc 'pocs/../pocs/a.bin' must not contain '..'"
    >>> resolve_poc(task, "/ssebench", "run_poc", "pocs/b.bin").failure()
    "the task names no PoC 'pocs/b.bin'; its PoCs are: pocs/a.bin"
    """
    if action != "run_poc":
        if poc is not None:
            return Failure(f"poc is only for run_poc, not {action}")
        return Success(None)
    if not poc:
        return Failure("run_poc needs a poc: one of the task's PoC paths")
    if "\x00" in poc:
        return Failure("poc must not contain NUL")
    wanted = PurePosixPath(poc)
    if ".." in wanted.parts:
        return Failure(f"poc {poc!r} must not contain '..'")
    for configured in task.files.poc:
        if wanted in (PurePosixPath(configured), PurePosixPath(task_path(folder, configured))):
            return Success(configured)
    names = ", ".join(task.files.poc) or "none"
    return Failure(f"the task names no PoC {poc!r}; its PoCs are: {names}")


def public_project(task: Task) -> ProjectView:
    """The public view of a task: what `GET /project` may show anyone.

    >>> view = public_project(Task(id="t", files={"patch": "fix.diff", "future_test": "f.diff"}))
    >>> "fix.diff" in view.model_dump_json() or "f.diff" in view.model_dump_json()
    False
    """
    described = task.task_description
    return ProjectView(
        id=task.id,
        project=task.project,
        language=task.language,
        checks=_in_order(task.checks),
        scripts=ProjectScripts(
            build=task.scripts.build, run=task.scripts.run, test=task.scripts.test
        ),
        pocs=list(task.files.poc),
        issue=described.issue if described else None,
        bug_description=described.bug_description if described else None,
        crash_report=list(described.crash_report) if described else [],
    )


def capabilities(task: Task, level: Level, listener: Listener, agent_phase: bool) -> Capabilities:
    """What the asking listener may do now, and what the task has.

    >>> from ssegrade.protocol._difficulty import LEVELS
    >>> task = Task(id="t", scripts={"build": "b.sh", "test": "t.sh"})
    >>> capabilities(task, LEVELS[3], "agent", True).actions
    ['build']
    >>> capabilities(task, LEVELS[3], "agent", False).actions
    []
    >>> capabilities(task, LEVELS[4], "admin", False).actions
    ['build', 'run_poc', 'function_test', 'intent_test']
    """
    actions = [
        action
        for action in ACTIONS
        if refusal(level, listener, agent_phase, action, grading=False) is None
    ]
    checks = task.checks
    return Capabilities(
        can_build="build" in checks,
        can_run_poc="poc" in checks,
        poc_count=len(task.files.poc),
        has_function_test="function_test" in checks,
        has_intent_test="intent_test" in checks,
        listener=listener,
        level=level.number,
        level_name=level.name,
        actions=actions,
        agent_phase=agent_phase,
        checks=_in_order(checks),
        pocs=list(task.files.poc),
    )
