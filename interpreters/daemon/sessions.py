"""The daemon's two bencher sessions on this machine: a `LocalSystem` each.

Interpreter layer. The agent phase's `LocalSystem` copies from the agent's live source tree and
logs into `results/agent-phase/`; the grading session's copies from the grading repo and writes
`final.patch`, `commits.log` and the logs of grading into the results folder. Each session has
its own scratch folder (copies, staged files, the runner's HOME and TMPDIR), so starting the
grading session discards everything the agent phase left there. Both live in one folder that
only the runner may pass through (ours, mode 0710, its group the runner's; 0700 without
isolation): the agent's account cannot enter it, nor reach a grading copy (with the hidden tests
in it) by guessing its name, and the runner cannot make entries in it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from interpreters.real import files
from interpreters.real.local import LocalSystem, Places
from interpreters.real.resultsfolder import AGENT_PHASE
from interpreters.real.runner import ContainmentPolicy, EnvPolicy, Runner
from ssegrade.internal.run import Interpreter

__all__ = ["AGENT_PHASE_RESULTS", "LocalSessions"]

AGENT_PHASE_RESULTS = AGENT_PHASE
"""Subfolder of the results folder holding the logs of the agent phase's actions."""


@dataclass
class LocalSessions:
    """Real sessions over `places` (`places.repo` is the grading repo, `places.scratch` the
    daemon's private scratch root); scripts run as `runner`, in the environment `env` (its
    `hidden` names the admin folder too), capped at `memory`, contained as `containment`
    says."""

    places: Places
    runner: Runner
    env: EnvPolicy | None = None
    memory: int | None = None
    containment: ContainmentPolicy | None = None
    _agent: LocalSystem | None = field(default=None, init=False, repr=False)
    _grading: LocalSystem | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _runner_passes_only(self.places.scratch, self.runner)

    def _system(self, repo: Path, results: Path, scratch: Path) -> LocalSystem:
        places = replace(self.places, repo=repo, results=results, scratch=scratch)
        # No overall limit of its own: each request carries its script limit.
        return LocalSystem(
            places, self.runner, env=self.env, memory=self.memory, containment=self.containment
        )

    def agent(self, limit: float) -> Interpreter:
        """The agent phase's `LocalSystem`: fresh copies of the live tree; each script it runs
        gets at most `limit` seconds."""
        if self.places.source is None:
            raise RuntimeError("the daemon needs the agent's source tree")
        if self._agent is None:
            self._agent = self._system(
                self.places.source,
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

    def grading(self, limit: float) -> Interpreter:
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


def _runner_passes_only(folder: Path, runner: Runner) -> None:
    """Make `folder` (an entry of our own private scratch folder, where nobody else may make
    one) ours, with mode 0710 and the runner's group when scripts run as the runner (it may
    pass through, not list nor write; everyone else is kept out), else mode 0700.

    Not the runner's own: a script of the agent phase could then plant a link where the
    grading session writes as root."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(folder, 0o700)
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    try:
        if runner.isolated:
            os.fchown(fd, -1, runner.gid)
        os.fchmod(fd, 0o710 if runner.isolated else 0o700)
    finally:
        os.close(fd)
