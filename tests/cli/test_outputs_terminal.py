"""Every name a task, an agent or a script chose reaches the operator's terminal inert: its
control characters (C0, DEL, C1, Unicode format controls) written as escapes, in every log
line, progress line, verdict line and one-line error (`ssegrade.internal.text.inert_text`).

The attack as it was found: a PoC file named `poc\\x1b[2K\\rpassed` made `evaluate` print
`failed: PoC failed: …/poc` and then erase the line and write `passed` over it.
"""

from __future__ import annotations

import io
import json
import logging
import subprocess
import tempfile
import unicodedata
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console

from interpreters.batch.progress import LineProgress, LiveProgress, QuietProgress
from interpreters.cli.main import main
from interpreters.cli.progress import CheckProgress
from interpreters.real import logs
from ssegrade.batch import Tally
from ssegrade.internal.text import inert_text
from tests.support.realtask import evaluating, make_task

CONTROL = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp"})
EVIL = "poc\x1b[2K\rpassed\x07\x1b]0;owned\x07\u202e\u2066\x9b31m.bin"

controls = st.sampled_from(
    ["\x1b", "\r", "\n", "\x07", "\x08", "\t", "\x7f", "\x85", "\x9b", "\u200b", "\u200e",
     "\u202e", "\u2066", "\u2028", "\u2029", "\ufeff", "\u00ad", "\udc9b"]
)  # fmt: skip
texts = st.text(st.one_of(controls, st.characters()), max_size=40)
"""Text with control characters among any others, lone surrogates included."""
names = st.text(
    st.one_of(controls, st.characters(codec="utf-8")).filter(lambda c: c not in "\x00/"),
    min_size=1,
    max_size=30,
).filter(lambda name: name not in (".", ".."))
"""File names: what a task or an agent can name a file."""


def raw(shown: str) -> list[str]:
    """The control characters in `shown`, but the line breaks between lines."""
    return [c for c in shown if unicodedata.category(c) in CONTROL and c != "\n"]


@given(text=texts)
def test_inert_text_leaves_no_control_keeps_printable_text_and_is_idempotent(text: str) -> None:
    shown = inert_text(text)
    assert not [c for c in shown if unicodedata.category(c) in CONTROL]
    assert inert_text(shown) == shown
    if text.isprintable():
        assert shown == text


FIXTURE = settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@FIXTURE
@given(text=texts, prefix=texts)
def test_every_log_line_on_stderr_is_inert(
    text: str, prefix: str, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    live = io.StringIO()
    display = CheckProgress(Console(file=live, force_terminal=False, color_system=None))
    with logs.speaking(logging.DEBUG, prefix=prefix, display=display):
        said = logging.getLogger("interpreters.tests.inert")
        said.warning("note: %s", text)
        said.info("check %s: running…", text, extra=logs.running())
        said.info("check %s: passed", text)
    shown = live.getvalue() + capsys.readouterr().err
    assert not raw(shown), repr(shown)
    assert len(shown.splitlines()) == 3
    assert inert_text(text) in shown


@settings(max_examples=50, deadline=None)
@given(text=texts)
def test_every_progress_line_is_inert(text: str) -> None:
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, color_system=None, soft_wrap=True)
    tally = Tally(total=2)
    for reporter in (LineProgress(console), QuietProgress(console), LiveProgress(console)):
        reporter.begin(tally)
        reporter.finished(tally, f"passed {text}")
        reporter.note(f"note {text}")
        reporter.end(f"done {text}")
    checks = CheckProgress(console)
    checks.say(f"check {text}")
    checks.started(f"check {text}: running…")
    checks.close()
    assert not raw(out.getvalue()), repr(out.getvalue())


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(name=names)
def test_every_one_line_error_quoting_a_name_is_inert(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with tempfile.TemporaryDirectory(prefix="ssegrade-inert-") as top:
        missing = Path(top) / name
        bad_task = ["evaluate", "--task", str(missing), "--results", str(Path(top) / "r")]
        jobs = Path(top, name)
        jobs.write_text(json.dumps({"task": name, "patch": name}) + "\n")
        bad_jobs = ["batch", str(jobs), "--results", str(Path(top) / "b"), "--containment", "weak"]
        for argv in (bad_task, bad_jobs, ["report", str(missing)]):
            capsys.readouterr()
            with pytest.raises(SystemExit) as ended:
                main(argv)
            out, err = capsys.readouterr()
            assert ended.value.code == 2, (argv, out, err)
            assert err.startswith("ssegrade: error: "), err
            assert not raw(out + err), repr(err)


def test_a_poc_named_to_erase_the_verdict_reaches_the_terminal_inert(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    (made.task / "pocs" / "poc1.bin").rename(made.task / "pocs" / EVIL)
    config = yaml.safe_load((made.task / "config.yaml").read_text())
    config["files"]["poc"][0] = f"pocs/{EVIL}"
    (made.task / "config.yaml").write_text(yaml.safe_dump(config))
    done = subprocess.run(
        evaluating(made, "--containment", "weak"), capture_output=True, timeout=300, check=False
    )
    # Bytes as the terminal gets them: no newline translation hides a carriage return.
    out, err = (stream.decode("utf-8", "surrogateescape") for stream in (done.stdout, done.stderr))
    assert done.returncode == 0, err
    for stream in (out, err):
        assert not raw(stream), repr(stream)
    (verdict,) = out.splitlines()
    assert verdict.startswith("failed: PoC failed: ")
    assert verdict.endswith(inert_text(EVIL))
    assert f"{inert_text(EVIL)}: FAILED" in err
