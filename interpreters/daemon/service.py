"""What the daemon does for each request, apart from HTTP: gates, sessions, one action at a time.

Interpreter layer. `Service` owns the two bencher sessions of a task (SPEC §9): the agent
phase's, whose copies come from the agent's live tree (what `test_patch` tests), and the grading
session that `POST /prepare_grading` starts, whose copies come from the grading repo once the
captured patch is applied. It answers the bencher's grading effects with the pure bencher
programs (`ssegrade.internal.bencher`) over the system interpreter of each session (`Sessions`:
the real
ones, `interpreters.daemon.sessions.LocalSessions`, or fakes in tests), and reads what its API
serves as effects too (`DaemonRead`, answered by `reads`: `interpreters.daemon.reads` or a
fake).

Every request that does work takes its turn (`interpreters.daemon.turns`), so one bencher action
(or capture) runs at a time; the HTTP layer calls these methods from worker threads. A request
waiting for its turn is refused as soon as it may no longer run: an agent-facing tool call with
403 once the agent phase ends, any one with 503 once the daemon stops; the phase is checked again
when the turn comes. On the admin socket, once `POST /prepare_grading` has started the grading
session, every bencher action runs in it, whether the call says `grading` or not (as SSEBench's
evaluator calls `run_poc`). The agent's `bash` tool has its own shell and lock
(`interpreters.daemon.shell`).
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from dataclasses import dataclass, field

from returns.result import Failure, Success

from interpreters.daemon.ports import MAX_TASK_FILE, Sessions, Shell, ShellError, ask
from interpreters.daemon.turns import Session, Turns
from ssegrade.guard import GuardFacts
from ssegrade.internal.bencher import BenchSession, bench, observe, prepare, task_path
from ssegrade.internal.effects import (
    Action,
    CaptureTree,
    ChangedFiles,
    ReadArtifact,
    ReadDialog,
    ReadTaskFile,
    ScriptResult,
)
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.result import EvaluationResult, parse_result
from ssegrade.internal.run import Interpreter, run
from ssegrade.internal.task import Task
from ssegrade.protocol import (
    ADMIN_ONLY,
    AGENT_PHASE_OVER,
    AgentExitedReply,
    BencherRequest,
    Capabilities,
    DiffText,
    FilesReply,
    Level,
    Listener,
    PrepareApplyFailed,
    PrepareCaptureFailed,
    PrepareSucceeded,
    ProjectView,
    Refusal,
    VersionReply,
    bencher_reply,
    capabilities,
    changed_files,
    encode_patch,
    gate,
    prepare_reply,
    public_project,
    refusal,
    resolve_poc,
)

__all__ = ["Refused", "Service"]

_log = logging.getLogger(__name__)


class Refused(SsegradeError):
    """A request the daemon refuses: the HTTP status and one line saying why; `reason` says
    which gate refused a tool call (so that each API words it its own way)."""

    def __init__(self, status: int, message: str, reason: Refusal | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


NOT_PREPARED = "grading is not prepared: POST /prepare_grading first"
STOPPING = "the daemon is stopping"
REFERENCE_LOCKED = "reference patch is unavailable while the agent is running"


@dataclass
class Service:
    """The daemon's state and behaviour for one task; thread-safe."""

    task: Task
    folder: str
    level: Level
    sessions: Sessions
    reads: Interpreter
    version: str
    shell: Shell | None = None
    source: str = ""
    script_timeout: float = 3600.0
    agent_phase: bool = True
    stopping: bool = False
    _turns: Turns = field(default_factory=Turns, init=False, repr=False)
    _agent: BenchSession = field(init=False, repr=False)
    _grading: BenchSession | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._agent = BenchSession(task=self.task, folder=self.folder)

    # ------------------------------------------------------------------ helpers

    def _may_run(self, listener: Listener, tool: bool) -> None:
        if self.stopping:
            raise Refused(503, STOPPING)
        if tool:
            self._agent_tools_open(listener)

    def _work(
        self, listener: Listener, session: Session | None = None, *, tool: bool = True
    ) -> AbstractContextManager[None]:
        """This request's turn (a `tool` call closes with the agent phase)."""
        return self._turns.take(listener, session, lambda: self._may_run(listener, tool))

    def admin_only(self, listener: Listener) -> None:
        """Refuse (403) an admin-only endpoint reached on an agent-facing listener."""
        if listener != "admin":
            raise Refused(403, ADMIN_ONLY)

    def after_agent(self, listener: Listener) -> None:
        """Refuse (403) the reference fix on an agent-facing listener while the agent phase
        lasts; once `POST /admin/agent_exited` ended it, every listener may read it."""
        if listener != "admin" and self.agent_phase:
            raise Refused(403, REFERENCE_LOCKED)

    def _agent_tools_open(self, listener: Listener) -> None:
        if listener == "agent" and not self.agent_phase:
            raise Refused(403, AGENT_PHASE_OVER, "phase")

    def grading_session(self, listener: Listener, grading: bool) -> bool:
        """Whether a bencher call runs in the grading session: asked for, or made on the admin
        socket once grading has started."""
        return grading or (listener == "admin" and self._grading is not None)

    def _limit(self, listener: Listener, request: BencherRequest) -> float:
        """The evaluator (admin) sets its own limit; an agent's is capped by the daemon's."""
        if request.limit is None:
            return self.script_timeout
        if listener == "admin":
            return request.limit
        return min(request.limit, self.script_timeout)

    # ------------------------------------------------------------------ read-only views

    def results_file(self, name: str) -> bytes | None:
        """A file of the results folder, or None when it does not exist."""
        return ask(self.reads, ReadArtifact(name))

    def task_text(self, path: str) -> str:
        """A file of the task folder (config path) as text (U+FFFD for odd bytes); the empty
        text when unreadable."""
        read = ask(self.reads, ReadTaskFile(task_path(self.folder, path), MAX_TASK_FILE))
        return read.unwrap().decode("utf-8", "replace") if isinstance(read, Success) else ""

    def reference(self) -> bytes | None:
        """The task's reference fix (`files.patch`), or None when it has none or it cannot
        be read."""
        if self.task.files.patch is None:
            return None
        read = ask(
            self.reads, ReadTaskFile(task_path(self.folder, self.task.files.patch), MAX_TASK_FILE)
        )
        return read.unwrap() if isinstance(read, Success) else None

    def dialog(self) -> bytes | None:
        """The agent side's dialog file (`dialog.jsonl`), or None when there is none."""
        return ask(self.reads, ReadDialog())

    def version_info(self) -> VersionReply:
        """`GET /version`."""
        return VersionReply(version=self.version)

    def project(self) -> ProjectView:
        """`GET /project`: the public view of the task."""
        return public_project(self.task)

    def capabilities(self, listener: Listener) -> Capabilities:
        """`GET /capabilities` for the listener asking."""
        return capabilities(self.task, self.level, listener, self.agent_phase)

    def result(self) -> EvaluationResult:
        """`GET /result`: the grade in the results folder (404 before one is written: the
        empty `result.json` a runner makes before grading is none)."""
        data = self.results_file("result.json")
        if data is None or not data.strip():
            raise Refused(404, "no result yet: grading has not written result.json")
        parsed = parse_result(data)
        if isinstance(parsed, Failure):
            raise Refused(500, str(parsed.failure()))
        return parsed.unwrap()

    def final_diff(self) -> DiffText:
        """`GET /final_diff`: the patch grading captured (404 before `prepare_grading`)."""
        data = None
        if self._grading is not None and self._grading.prepared is not None:
            data = self.results_file("final.patch")
        if data is None:
            raise Refused(404, "no final diff yet: grading has not captured the patch")
        return encode_patch(data)

    def reference_patch(self, listener: Listener) -> DiffText:
        """`GET /reference/patch`: the task's reference fix, on the admin socket, and on the
        agent-facing listeners once the agent phase is over."""
        self.after_agent(listener)
        data = self.reference()
        if data is None:
            raise Refused(404, "the task has no reference patch")
        return encode_patch(data)

    # ------------------------------------------------------------------ captures

    def diff(self, listener: Listener) -> DiffText:
        """`GET /diff`: the live tree's patch against the baseline, as grading captures it
        (on every listener, in either phase)."""
        with self._work(listener, tool=False):
            captured = ask(self.reads, CaptureTree())
        if isinstance(captured, Failure):
            raise Refused(500, captured.failure().message)
        return encode_patch(captured.unwrap().patch)

    def files(self, listener: Listener) -> FilesReply:
        """`GET /files`: the paths the live patch changes, with how, as git lists them (on
        every listener, in either phase)."""
        with self._work(listener, tool=False):
            listed = ask(self.reads, ChangedFiles())
        if isinstance(listed, Failure):
            raise Refused(500, listed.failure().message)
        found = changed_files(listed.unwrap())
        if isinstance(found, Failure):
            raise Refused(500, found.failure())
        return FilesReply(files=list(found.unwrap()))

    # ------------------------------------------------------------------ actions

    def _refuse_tool(self, listener: Listener, action: Action | None, grading: bool) -> None:
        refused = gate(self.level, listener, self.agent_phase, action, grading)
        if refused is not None:
            message = refusal(self.level, listener, self.agent_phase, action, grading)
            raise Refused(403, message or str(refused), refused)

    def bencher(self, listener: Listener, action: Action, request: BencherRequest) -> ScriptResult:
        """`POST /tool/bencher`: one bencher action, gated for agent-facing listeners."""
        self._refuse_tool(listener, action, request.grading)
        poc = resolve_poc(self.task, self.folder, action, request.poc)
        if not isinstance(poc, Success):
            raise Refused(400, poc.failure())
        limit = self._limit(listener, request)
        grading = self.grading_session(listener, request.grading)
        with self._work(listener, "grading" if grading else "agent"):
            # the agent phase may have ended while this call waited
            self._refuse_tool(listener, action, request.grading)
            if grading:
                session = self._grading
                if session is None or not isinstance(session.prepared, Success):
                    return ScriptResult(code=-1, stderr=NOT_PREPARED)
                system = self.sessions.grading(limit)
            else:
                session = self._agent
                system = self.sessions.agent(limit)
            result = run(bench(session, action, poc.unwrap()), system)
        what = f"{action} {poc.unwrap()}" if poc.unwrap() else action
        where = "grading session" if grading else "live tree"
        how = "killed" if result.killed else f"exit {result.code}"
        _log.info("%s: %s on the %s: %s (%.1fs)", listener, what, where, how, result.seconds)
        return bencher_reply(result, listener)

    def bash(self, listener: Listener, command: str) -> ScriptResult:
        """`POST /tool/bash`: a command in the agent's shell; agent-facing listeners may call
        it during the agent phase only. `ShellError` when the shell is gone or cannot start."""
        self._refuse_tool(listener, None, grading=False)
        if self.stopping:
            raise Refused(503, STOPPING)
        if self.shell is None:
            raise ShellError("the daemon has no bash tool")
        result = self.shell.run(command, self.script_timeout)
        _log.info("%s: bash: exit %s", listener, result.code)
        return result

    def prepare_grading(
        self, listener: Listener
    ) -> PrepareSucceeded | PrepareApplyFailed | PrepareCaptureFailed:
        """`POST /prepare_grading` (admin only): a fresh runner session, capture, save, apply.

        The first call ends the agent phase's session (its copies and caches are discarded);
        a later call starts a fresh runner session again but never applies the patch twice.
        """
        self.admin_only(listener)
        with self._work(listener, "grading"):
            if self._grading is None:
                self.sessions.begin_grading()
                self._grading = BenchSession(task=self.task, folder=self.folder)
                self._agent = BenchSession(task=self.task, folder=self.folder)
            system = self.sessions.grading(self.script_timeout)
            prepared = run(prepare(self._grading), system)
        reply = prepare_reply(prepared)
        _log.info("prepare_grading: %s", reply.outcome)
        return reply

    def observe_guard(self, listener: Listener) -> GuardFacts:
        """`POST /ssegrade/guard/observe` (admin only, ssegrade's own): what the patch guard
        reads besides the patch, observed in the grading session (404 before it is prepared)."""
        self.admin_only(listener)
        with self._work(listener, "grading"):
            session = self._grading
            if session is None or not isinstance(session.prepared, Success):
                raise Refused(404, NOT_PREPARED)
            facts = run(observe(session), self.sessions.grading(self.script_timeout))
        _log.info("guard: observed %d PoC files", len(facts.pocs))
        return facts

    def agent_exited(self, listener: Listener) -> AgentExitedReply:
        """`POST /admin/agent_exited` (admin only): close the agent-facing tools for good, kill
        the agent's shell and abort an agent action still running. Calling it again changes
        nothing."""
        self.admin_only(listener)
        running = self._turns.change(self._close_agent_phase)  # waiting agent calls: refused
        _log.info("the agent exited: agent-facing tools are closed")
        self._close_shell()
        if running == "agent":
            self.sessions.abort()
        return AgentExitedReply()

    # ------------------------------------------------------------------ shutdown

    def stop(self) -> None:
        """Refuse new actions and abort the one running now (SIGTERM, SIGINT)."""
        running = self._turns.change(self._stop)  # requests waiting for their turn: refused
        self._close_shell()
        if running is not None:
            self.sessions.abort()

    def _close_shell(self) -> None:
        if self.shell is not None:
            self.shell.close()

    def _close_agent_phase(self) -> None:
        self.agent_phase = False

    def _stop(self) -> None:
        self.stopping = True

    def wait_idle(self, seconds: float) -> bool:
        """Wait until no action runs (at most `seconds`); whether it is idle now."""
        return self._turns.wait_idle(seconds)
