"""What the daemon does for each request, apart from HTTP: gates, sessions, one action at a time.

Interpreter layer. `Service` owns the two bencher sessions of a task (SPEC §9): the agent
phase's, whose copies come from the agent's live tree (what `test_patch` tests), and the grading
session that `POST /prepare_grading` starts, whose copies come from the grading repo once the
captured patch is applied. It answers the bencher's grading effects with the pure bencher
programs (`ssegrade.bencher`) over a system interpreter that a `Backend` provides: the real one
(`interpreters.daemon.backend.LocalBackend`) or a fake one in tests.

Every request that does work takes its turn (`_work`), so one bencher action (or capture) runs at
a time; the HTTP layer calls these methods from worker threads. A request waiting for its turn
is refused as soon as it may no longer run: an agent-facing tool call with 403 once the agent
phase ends, any one with 503 once the daemon stops; the phase is checked again when the turn
comes. On the admin socket, once `POST /prepare_grading` has started the grading session, every
bencher action runs in it, whether the call says `grading` or not (as SSEBench's evaluator
calls `run_poc`). The agent's `bash` tool has its own shell and lock (`interpreters.daemon.shell`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal, Protocol

from returns.result import Failure, Result, Success

from ssegrade.bencher import BenchSession, bench, observe, prepare
from ssegrade.difficulty import Level
from ssegrade.effects import Action, CaptureError, ScriptResult
from ssegrade.guard import GuardFacts
from ssegrade.protocol import (
    ADMIN_ONLY,
    AGENT_PHASE_OVER,
    AgentExitedReply,
    BencherRequest,
    Capabilities,
    DiffText,
    FilesReply,
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
from ssegrade.result import EvaluationResult, parse_result
from ssegrade.run import Interpreter, run
from ssegrade.task import Task

__all__ = ["Backend", "Refused", "Service"]


class Refused(Exception):
    """A request the daemon refuses: the HTTP status and one line saying why; `reason` says
    which gate refused a tool call (so that each API words it its own way)."""

    def __init__(self, status: int, message: str, reason: Refusal | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.reason = reason


class Backend(Protocol):
    """The system side of a daemon: system interpreters for the two sessions, and files."""

    def agent_system(self, limit: float) -> Interpreter:
        """The system interpreter of the agent phase (copies from the live tree); each script
        it runs gets at most `limit` seconds."""
        ...

    def begin_grading(self) -> None:
        """Start the grading session: kill every runner process and discard the agent phase's
        scratch area and caches. Called once, before the first `grading_system`."""
        ...

    def grading_system(self, limit: float) -> Interpreter:
        """The system interpreter of the grading session (copies from the grading repo)."""
        ...

    def abort(self) -> None:
        """Kill the runner's processes, so that the script running now ends at once."""
        ...

    def live_patch(self) -> Result[bytes, CaptureError]:
        """Capture the live tree against the baseline, as grading would (no proof, no files)."""
        ...

    def live_files(self) -> Result[bytes, CaptureError]:
        """The files the live tree changes against the baseline, as `git diff-tree -r -z
        --raw --numstat --no-renames` lists them (staged as grading would)."""
        ...

    def results_file(self, name: str) -> bytes | None:
        """A file of the results folder, or None when it does not exist."""
        ...

    def reference_patch(self) -> bytes | None:
        """The task's reference fix (`files.patch`), or None when the task has none."""
        ...

    def task_text(self, path: str) -> str:
        """A file of the task folder (config path) as text; the empty text when unreadable."""
        ...

    def dialog(self) -> bytes | None:
        """The agent side's dialog file (`dialog.jsonl`), or None when there is none."""
        ...

    def shell(self, command: str, limit: float) -> ScriptResult:
        """Run a command in the agent's persistent shell; `ShellError` when it cannot."""
        ...

    def close_shell(self) -> None:
        """Kill the agent's shell for good."""
        ...


NOT_PREPARED = "grading is not prepared: POST /prepare_grading first"
STOPPING = "the daemon is stopping"


@dataclass
class Service:
    """The daemon's state and behaviour for one task; thread-safe."""

    task: Task
    folder: str
    level: Level
    backend: Backend
    version: str
    source: str = ""
    script_timeout: float = 3600.0
    say: Callable[[str], None] = field(default=lambda _line: None, repr=False)
    agent_phase: bool = True
    stopping: bool = False
    _turn: threading.Condition = field(default_factory=threading.Condition, repr=False)
    _busy: bool = field(default=False, init=False, repr=False)
    _admins_waiting: int = field(default=0, init=False, repr=False)
    _agent: BenchSession = field(init=False, repr=False)
    _grading: BenchSession | None = field(default=None, init=False, repr=False)
    _running: Literal["agent", "grading"] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        self._agent = BenchSession(task=self.task, folder=self.folder)

    # ------------------------------------------------------------------ helpers

    def _may_run(self, listener: Listener, tool: bool) -> None:
        if self.stopping:
            raise Refused(503, STOPPING)
        if tool:
            self._agent_tools_open(listener)

    @contextmanager
    def _work(
        self,
        listener: Listener,
        session: Literal["agent", "grading"] | None = None,
        *,
        tool: bool = True,
    ) -> Iterator[None]:
        """Wait for this request's turn, then hold it; refused while waiting as soon as the
        request may no longer run (a `tool` call closes with the agent phase), and checked
        again when the turn comes."""
        with self._turn:
            self._may_run(listener, tool)
            waiting = listener == "admin"
            self._admins_waiting += waiting
            try:
                # The admin socket goes first: an agent's queued requests never delay grading.
                while self._busy or (listener == "agent" and self._admins_waiting):
                    self._turn.wait()
                    self._may_run(listener, tool)
            finally:
                self._admins_waiting -= waiting
            self._busy = True
            self._running = session
        try:
            yield
        finally:
            with self._turn:
                self._busy = False
                self._running = None
                self._turn.notify_all()

    def admin_only(self, listener: Listener) -> None:
        """Refuse (403) an admin-only endpoint reached on an agent-facing listener."""
        if listener != "admin":
            raise Refused(403, ADMIN_ONLY)

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
        """`GET /result`: the grade in the results folder (404 before one is written)."""
        data = self.backend.results_file("result.json")
        if data is None:
            raise Refused(404, "no result yet: grading has not written result.json")
        parsed = parse_result(data)
        if isinstance(parsed, Failure):
            raise Refused(500, str(parsed.failure()))
        return parsed.unwrap()

    def final_diff(self) -> DiffText:
        """`GET /final_diff`: the patch grading captured (404 before `prepare_grading`)."""
        data = None
        if self._grading is not None and self._grading.prepared is not None:
            data = self.backend.results_file("final.patch")
        if data is None:
            raise Refused(404, "no final diff yet: grading has not captured the patch")
        return encode_patch(data)

    def reference_patch(self, listener: Listener) -> DiffText:
        """`GET /reference/patch` (admin only): the task's reference fix."""
        self.admin_only(listener)
        data = self.backend.reference_patch()
        if data is None:
            raise Refused(404, "the task has no reference patch")
        return encode_patch(data)

    # ------------------------------------------------------------------ captures

    def diff(self, listener: Listener) -> DiffText:
        """`GET /diff`: the live tree's patch against the baseline, as grading captures it
        (on every listener, in either phase)."""
        with self._work(listener, tool=False):
            captured = self.backend.live_patch()
        if isinstance(captured, Failure):
            raise Refused(500, captured.failure().message)
        return encode_patch(captured.unwrap())

    def files(self, listener: Listener) -> FilesReply:
        """`GET /files`: the paths the live patch changes, with how, as git lists them (on
        every listener, in either phase)."""
        with self._work(listener, tool=False):
            listed = self.backend.live_files()
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
                system = self.backend.grading_system(limit)
            else:
                session = self._agent
                system = self.backend.agent_system(limit)
            result = run(bench(session, action, poc.unwrap()), system)
        what = f"{action} {poc.unwrap()}" if poc.unwrap() else action
        where = "grading session" if grading else "live tree"
        how = "killed" if result.killed else f"exit {result.code}"
        self.say(f"{listener}: {what} on the {where}: {how} ({result.seconds:.1f}s)")
        return bencher_reply(result, listener)

    def bash(self, listener: Listener, command: str) -> ScriptResult:
        """`POST /tool/bash`: a command in the agent's shell; agent-facing listeners may call
        it during the agent phase only. `ShellError` when the shell is gone or cannot start."""
        self._refuse_tool(listener, None, grading=False)
        if self.stopping:
            raise Refused(503, STOPPING)
        result = self.backend.shell(command, self.script_timeout)
        self.say(f"{listener}: bash: exit {result.code}")
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
                self.backend.begin_grading()
                self._grading = BenchSession(task=self.task, folder=self.folder)
                self._agent = BenchSession(task=self.task, folder=self.folder)
            system = self.backend.grading_system(self.script_timeout)
            prepared = run(prepare(self._grading), system)
        reply = prepare_reply(prepared)
        self.say(f"prepare_grading: {reply.outcome}")
        return reply

    def observe_guard(self, listener: Listener) -> GuardFacts:
        """`POST /ssegrade/guard/observe` (admin only, ssegrade's own): what the patch guard
        reads besides the patch, observed in the grading session (404 before it is prepared)."""
        self.admin_only(listener)
        with self._work(listener, "grading"):
            session = self._grading
            if session is None or not isinstance(session.prepared, Success):
                raise Refused(404, NOT_PREPARED)
            facts = run(observe(session), self.backend.grading_system(self.script_timeout))
        self.say(f"guard: observed {len(facts.pocs)} PoC files")
        return facts

    def agent_exited(self, listener: Listener) -> AgentExitedReply:
        """`POST /admin/agent_exited` (admin only): close the agent-facing tools for good, kill
        the agent's shell and abort an agent action still running. Calling it again changes
        nothing."""
        self.admin_only(listener)
        with self._turn:
            self.agent_phase = False
            self._turn.notify_all()  # agent requests waiting for their turn are refused now
            running = self._running
        self.say("the agent exited: agent-facing tools are closed")
        self.backend.close_shell()
        if running == "agent":
            self.backend.abort()
        return AgentExitedReply()

    # ------------------------------------------------------------------ shutdown

    def stop(self) -> None:
        """Refuse new actions and abort the one running now (SIGTERM, SIGINT)."""
        with self._turn:
            self.stopping = True
            self._turn.notify_all()  # requests waiting for their turn are refused now
            running = self._running
        self.backend.close_shell()
        if running is not None:
            self.backend.abort()

    def wait_idle(self, seconds: float) -> bool:
        """Wait until no action runs (at most `seconds`); whether it is idle now."""
        with self._turn:
            return self._turn.wait_for(lambda: not self._busy, timeout=seconds)
