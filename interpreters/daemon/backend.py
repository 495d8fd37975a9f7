"""The daemon's real system side: a `LocalSystem` per session, the live capture, the files.

Interpreter layer. The agent phase's `LocalSystem` copies from the agent's live source tree and
logs into `results/agent-phase/`; the grading session's copies from the grading repo and writes
`final.patch`, `commits.log` and the logs of grading into the results folder. Each session has
its own scratch folder (copies, staged files, the runner's HOME and TMPDIR), so starting the
grading session discards everything the agent phase left there. It also reads the task's
files for `GET /project`, the agent side's dialog file (never through a link the agent made),
and holds the agent's shell (`bash` tool).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.daemon.shell import AgentShell, ShellError
from interpreters.real import files, git
from interpreters.real.local import LocalSystem, Places
from interpreters.real.runner import ContainmentPolicy, EnvPolicy, Runner
from ssegrade.effects import CaptureError, ScriptResult
from ssegrade.run import Interpreter

__all__ = ["AGENT_PHASE_RESULTS", "DIALOG", "MAX_DIALOG", "LocalBackend"]

AGENT_PHASE_RESULTS = "agent-phase"
"""Subfolder of the results folder holding the logs of the agent phase's actions."""
DIALOG = "dialog.jsonl"
"""The agent side's dialog file, in the archive folder (`SSE_ARCHIVE`)."""
MAX_DIALOG = 16 << 20
"""A larger dialog file is read up to this many bytes."""
_AGENT_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass
class LocalBackend:
    """Real sessions over `places` (`places.repo` is the grading repo, `places.scratch` the
    daemon's private scratch root); scripts run as `runner`; `reference` is the task's
    reference fix, when it has one."""

    places: Places
    runner: Runner
    reference: Path | None = None
    say: Callable[[str], None] = print
    env: EnvPolicy | None = None
    """The scripts' environment (its `hidden` names the admin folder too)."""
    memory: int | None = None
    containment: ContainmentPolicy | None = None
    agent_shell: AgentShell | None = None
    """The `bash` tool's shell; None: the tool answers that it has none."""
    archive: Path | None = None
    """The archive folder the agent side writes its dialog into."""
    _agent: LocalSystem | None = field(default=None, init=False, repr=False)
    _grading: LocalSystem | None = field(default=None, init=False, repr=False)

    def _system(self, repo: Path, results: Path, scratch: Path) -> LocalSystem:
        places = Places(
            task=self.places.task,
            source=self.places.source,
            baseline=self.places.baseline,
            repo=repo,
            results=results,
            scratch=scratch,
            support=self.places.support,
        )
        # No overall limit of its own: each request carries its script limit.
        return LocalSystem(
            places,
            self.runner,
            say=self.say,
            env=self.env,
            memory=self.memory,
            containment=self.containment,
        )

    def _live(self) -> tuple[Path, git.Baseline]:
        if self.places.source is None or self.places.baseline is None:
            raise RuntimeError("the daemon needs the agent's source tree and its baseline")
        return self.places.source, self.places.baseline

    def agent_system(self, limit: float) -> Interpreter:
        """The agent phase's `LocalSystem`: fresh copies of the live tree."""
        if self._agent is None:
            self._agent = self._system(
                self._live()[0],
                self.places.results / AGENT_PHASE_RESULTS,
                self.places.scratch / "agent",
            )
        self._agent.script_timeout = limit
        return self._agent

    def begin_grading(self) -> None:
        """Kill the runner's processes, discard the agent phase's scratch, new grading system."""
        self.abort()
        files.remove_tree(self.places.scratch / "agent")
        self._agent = None
        self._grading = self._system(
            self.places.repo, self.places.results, self.places.scratch / "grading"
        )

    def grading_system(self, limit: float) -> Interpreter:
        """The grading session's `LocalSystem`: fresh copies of the patched grading repo."""
        if self._grading is None:
            raise RuntimeError("the grading session has not begun")
        self._grading.script_timeout = limit
        return self._grading

    def abort(self) -> None:
        """Kill every process of the runner's sessions."""
        for system in (self._agent, self._grading):
            if system is not None:
                system.stop()

    def live_patch(self) -> Result[bytes, CaptureError]:
        """The patch of the live tree, captured exactly as `CaptureTree` does."""
        captured = git.capture(*self._live())
        if not isinstance(captured, Success):
            return Failure(captured.failure())
        return Success(captured.unwrap().patch)

    def live_files(self) -> Result[bytes, CaptureError]:
        """git's list of the files the live tree changes, staged exactly as `CaptureTree` does."""
        return git.changed_files(*self._live())

    def results_file(self, name: str) -> bytes | None:
        """A file of the results folder, or None."""
        try:
            return (self.places.results / name).read_bytes()
        except FileNotFoundError:
            return None

    def reference_patch(self) -> bytes | None:
        """The bytes of the task's reference fix, or None when it has none."""
        return None if self.reference is None else self.reference.read_bytes()

    def task_text(self, path: str) -> str:
        """A file of the task folder as text (U+FFFD for odd bytes); empty when unreadable."""
        try:
            return (self.places.task / path).read_bytes().decode("utf-8", "replace")
        except OSError:
            return ""

    def dialog(self) -> bytes | None:
        """The dialog file of the archive folder, read without following a final link and
        without blocking on a FIFO; None when it is missing, a link or not a regular file."""
        if self.archive is None:
            return None
        try:
            fd = os.open(self.archive / DIALOG, _AGENT_FILE)
        except OSError as exc:
            if exc.errno in (errno.ENOENT, errno.ELOOP, errno.ENOTDIR):
                return None
            raise
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return None
            chunks: list[bytes] = []
            size = 0
            while size < MAX_DIALOG and (chunk := os.read(fd, min(1 << 20, MAX_DIALOG - size))):
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def shell(self, command: str, limit: float) -> ScriptResult:
        """Run a command in the agent's shell (`ShellError` when there is none)."""
        if self.agent_shell is None:
            raise ShellError("the daemon has no bash tool")
        return self.agent_shell.run(command, limit)

    def close_shell(self) -> None:
        """Kill the agent's shell for good."""
        if self.agent_shell is not None:
            self.agent_shell.close()
