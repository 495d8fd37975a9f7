"""What ssegrade says goes through `logging`: progress at INFO, notes at WARNING, to stderr
only when a handler is attached (`interpreters.real.logs.speaking`), never to stdout; notes also
to the run's `logs/notes.log`."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from interpreters.cli.progress import CheckProgress
from interpreters.real.logs import RUNNING, level_of, speaking
from interpreters.real.resultsfolder.writer import ResultsWriter
from ssegrade.internal.effects import CheckFinished, CheckRecord, CheckStarted, Notify


def _writer(tmp_path: Path) -> ResultsWriter:
    (tmp_path / "logs").mkdir()
    return ResultsWriter(None, tmp_path)


def test_a_note_is_a_warning_and_a_line_of_notes_log_never_a_line_on_stdout(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.INFO, logger="interpreters")
    writer = _writer(tmp_path)
    writer(Notify("a note"))
    assert capsys.readouterr() == ("", "")
    assert [(r.levelno, r.getMessage()) for r in caplog.records] == [(logging.WARNING, "a note")]
    assert (tmp_path / "logs" / "notes.log").read_text() == "a note\n"


def test_progress_is_info_and_a_check_that_began_is_marked_running(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="interpreters")
    writer = _writer(tmp_path)
    writer(CheckStarted("build"))
    record = CheckRecord("build", None, 0, 1.25, False, "logs/01-build.log", passed=True)
    writer(CheckFinished(record))
    began, ended = caplog.records
    assert (began.levelno, began.getMessage(), getattr(began, RUNNING)) == (
        logging.INFO,
        "build: running…",
        True,
    )
    assert ended.getMessage() == "build: passed (1.2s; log logs/01-build.log)"
    assert not getattr(ended, RUNNING, False)
    assert not (tmp_path / "logs" / "notes.log").exists()  # progress is not a note


def test_speaking_shows_the_level_asked_for_on_stderr_after_a_prefix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    writer = _writer(tmp_path)
    with speaking(logging.INFO, prefix="run 1: "):
        writer(CheckStarted("build"))
        logging.getLogger("interpreters.elsewhere").debug("not shown")
        writer(Notify("50% done"))
    writer(Notify("after the block"))  # no handler any more: silent
    out, err = capsys.readouterr()
    assert out == ""
    assert err == "run 1: build: running…\nrun 1: 50% done\n"
    with speaking(level_of(quiet=True)):
        writer(CheckStarted("build"))
        writer(Notify("a note"))
    assert capsys.readouterr() == ("", "")
    with speaking(level_of(verbose=True)):
        logging.getLogger("interpreters.elsewhere").debug("now shown")
    assert capsys.readouterr().err == "now shown\n"
    # Off a terminal, a check that began is one plain line too.
    with speaking(display=CheckProgress()):
        writer(CheckStarted("build"))
        writer(Notify("[bold]as written[/bold] :smile:"))
    assert capsys.readouterr() == ("", "build: running…\n[bold]as written[/bold] :smile:\n")
