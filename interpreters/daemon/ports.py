"""What the daemon's service stands on besides its own state: the system side of its two
bencher sessions (`Sessions`), the agent's shell (`Shell`), and its reads, asked as effects.

Interpreter layer. The real ones are `interpreters.daemon.sessions.LocalSessions`,
`interpreters.daemon.shell.AgentShell` and `interpreters.daemon.reads.DaemonReads`; the tests
give fakes of each.
"""

from __future__ import annotations

from typing import Protocol, TypeVar

from ssegrade.internal.effects import Effect, ScriptResult
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.run import Interpreter, run

__all__ = ["MAX_TASK_FILE", "Sessions", "Shell", "ShellError", "ask"]

A = TypeVar("A")

MAX_TASK_FILE = 64 << 20
"""A larger task file (a script, a report, the reference fix) is read up to this many bytes."""


class ShellError(SsegradeError):
    """The shell cannot take the command; the message is one line (a 500 on the wire)."""


class Sessions(Protocol):
    """The system interpreters of the daemon's two bencher sessions."""

    def agent(self, limit: float) -> Interpreter:
        """The agent phase's system (copies from the live tree); each script it runs gets at
        most `limit` seconds."""
        ...

    def begin_grading(self) -> None:
        """Start the grading session: kill every runner process and discard the agent phase's
        scratch area and caches. Called once, before the first `grading`."""
        ...

    def grading(self, limit: float) -> Interpreter:
        """The grading session's system (copies from the grading repo)."""
        ...

    def abort(self) -> None:
        """Kill the runner's processes, so that the script running now ends at once."""
        ...


class Shell(Protocol):
    """The agent's persistent shell (the `bash` tool)."""

    def run(self, command: str, limit: float) -> ScriptResult:
        """Run a command in it; `ShellError` when it cannot."""
        ...

    def close(self) -> None:
        """Kill it for good."""
        ...


async def _asked(effect: Effect[A]) -> A:
    return await effect


def ask(interpret: Interpreter, effect: Effect[A]) -> A:
    """The answer `interpret` gives `effect`, asked as a program of one step (so that what it
    raises is raised here)."""
    return run(_asked(effect), interpret)
