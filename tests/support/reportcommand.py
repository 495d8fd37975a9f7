"""`ssegrade report` run through click as the console script runs it, and the one line a
failed run must end in."""

from __future__ import annotations

from click.testing import CliRunner, Result

from interpreters.cli.report import report


def invoke(*args: str, columns: int | None = None) -> Result:
    """Run the command as the console script would (`columns`: with `COLUMNS` set)."""
    env = {"COLUMNS": str(columns) if columns else ""}
    return CliRunner(env=env).invoke(report, list(args), catch_exceptions=False)


def one_line_error(out: Result) -> str:
    """The error of a failed command: exactly one stderr line besides the warnings about
    unreadable files, no traceback, no usage text."""
    assert out.exit_code != 0
    errors = [line for line in out.stderr.splitlines() if not line.startswith("warning: ")]
    assert len(errors) == 1
    assert "Traceback" not in out.stderr
    assert "Usage" not in out.stderr
    return errors[0]
