"""The `ssegrade` command group: every command listed, each but `evaluate` and the small ones
imported from its module when it is asked for.

Interpreter layer (command line). `evaluate` does not pay for the modules of the daemon, the
report or batch grading; `--help` lists a command whose extra is missing, saying which.
"""

from __future__ import annotations

import importlib
from typing import ClassVar

import click

from interpreters.cli.entry import EXTRAS

__all__ = ["LazyGroup"]


class LazyGroup(click.Group):
    """A group whose other commands are imported when they are asked for: `evaluate` does
    not pay for the modules of the daemon, the report or batch grading."""

    elsewhere: ClassVar[dict[str, str]] = {
        "report": "interpreters.cli.report:report",
        "daemon": "interpreters.cli.daemon:daemon",
        "test-patch": "interpreters.cli.daemon:test_patch",
        "verify": "interpreters.cli.verify:verify",
        "batch": "interpreters.cli.batch:batch",
        "replay": "interpreters.cli.replay:replay_command",
        "bundle": "interpreters.cli.bundle:bundle",
    }

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command, those defined here and those loaded on demand."""
        return sorted({*super().list_commands(ctx), *self.elsewhere})

    _listing = False

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        """The command named `cmd_name`, imported on first use. One whose extra is missing
        raises `ModuleNotFoundError` (the console script says which extra), but is listed."""
        if cmd_name not in self.elsewhere:
            return super().get_command(ctx, cmd_name)
        module, _, name = self.elsewhere[cmd_name].partition(":")
        try:
            command = getattr(importlib.import_module(module), name)
        except ModuleNotFoundError as missing:
            extra = EXTRAS.get((missing.name or "").partition(".")[0])
            if extra is None or not self._listing:
                raise
            return click.Command(cmd_name, help=f"(needs the '{extra}' extra)")
        assert isinstance(command, click.Command)
        return command

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands of `--help`, those whose extra is missing too."""
        self._listing = True
        try:
            super().format_commands(ctx, formatter)
        finally:
            self._listing = False
