"""A batch on a real terminal of 80 columns: the live bar reads whole and is drawn once, each
job that fails gets one line above it naming why, and the last line wraps at words.

The whole command runs in a `tmux` pane of 80 columns (a terminal that really wraps and moves
its cursor); the reporter alone runs on rich's recorded 80-column terminal."""

from __future__ import annotations

import io
import re
import shlex
import shutil
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from rich.console import Console

from interpreters.batch.outcomes import job_verdict
from interpreters.batch.progress import LiveProgress
from ssegrade.batch import Tally
from tests.support.batchkit import SCRIPT_ENV, holding_task
from tests.support.realtask import CLI, fix_to, make_task, write_jobs
from tests.support.scriptmarks import marked
from tests.support.waiting import wait_until

TIME = re.compile(r"(?:\d+|-):[\d-]{2}:[\d-]{2}")
"""A whole time (`0:01:23`, or `-:--:--` for an ETA not known yet), not `0:00:…`."""
BAR = re.compile(r"grading [━╸╺ ]+ \d+/\d+ \S+ ETA \S+")
"""One drawing of the bar's line (the recorded terminal keeps every drawing, without the
cursor moves between them)."""


def recorded() -> Console:
    return Console(file=io.StringIO(), width=80, force_terminal=True, record=True, highlight=False)


def test_the_bar_reads_whole_at_80_columns() -> None:
    """The bar is wide enough to read (it was 7 cells), the elapsed time and the ETA are whole
    (they were cut to `0:00:…`), and no line passes 80 columns."""
    console = recorded()
    live = LiveProgress(console)
    tally = Tally(total=1200)
    live.begin(tally)
    for n in range(600):
        tally.add("graded", "passed" if n % 3 else "failed")
    tally.add("cached", "error")
    live.tick(tally)
    live.end("601 graded")
    text = console.export_text()
    last = BAR.findall(text)[-1]
    assert len(last) <= 80
    assert len(re.findall(r"[━╸╺]", last)) >= 30, last
    assert len(TIME.findall(last)) == 2, last
    assert " 601/1200 " in last
    assert "400 passed, 200 failed, 1 error, 1 cached" in text


def test_a_failed_job_is_named_above_the_bar_inert_and_wrapped_at_words() -> None:
    """A job that fails gets its line (id, outcome, reason) above the bar, inert; a pass does
    not; the last line after Ctrl-C wraps at words, never mid-word."""
    console = recorded()
    live = LiveProgress(console)
    tally = Tally(total=27)
    live.begin(tally)
    tally.add("graded", "passed")
    live.finished(tally, "passed t/m/a/ok (1.0 s)")
    tally.add("graded", "error")
    live.finished(tally, "error tlv-slow/m/a/r1 (3.5 s): Timeout (3s)\x1b[2J", notable=True)
    last = (
        "2 graded, 1 passed, 0 failed, 1 error, 0 cached, 0 skipped in 4.2 s; interrupted: "
        "25 jobs never started; the same command resumes"
    )
    live.end(last)
    text = console.export_text()
    assert "error tlv-slow/m/a/r1 (3.5 s): Timeout (3s)\\x1b[2J\n" in text
    assert "\x1b" not in text
    assert "t/m/a/ok" not in text
    lines = text.splitlines()
    tail = lines[-2:]
    assert " ".join(line.rstrip() for line in tail) == last
    assert all(len(line) <= 80 for line in tail)
    words = set(last.split())
    assert all(word in words for line in tail for word in line.split())


class Pane:
    """A tmux pane of 80 columns on a server of its own, running one shell command."""

    def __init__(self, cwd: Path, command: str) -> None:
        self.tmux = ["tmux", "-L", f"ssegrade-test-{uuid.uuid4().hex[:12]}", "-f", "/dev/null"]
        shell = f"cd {shlex.quote(str(cwd))}; {command}; echo EXIT=$?; sleep 600"
        subprocess.run(
            [*self.tmux, "new-session", "-d", "-x", "80", "-y", "40", shell],
            check=True,
            timeout=30,
        )

    def screen(self) -> str:
        """The pane's text, with its history."""
        return subprocess.run(
            [*self.tmux, "capture-pane", "-p", "-S", "-200"],
            capture_output=True,
            text=True,
            check=True,
            timeout=30,
        ).stdout

    def wait_for(self, text: str, seconds: float = 300) -> str:
        """The screen once it shows `text` (the screen as it was when time ran out)."""
        deadline = time.monotonic() + seconds
        screen = self.screen()
        while text not in screen and time.monotonic() < deadline:
            time.sleep(0.3)
            screen = self.screen()
        return screen

    def keys(self, *keys: str) -> None:
        """Type `keys` (tmux names: `C-c`)."""
        subprocess.run([*self.tmux, "send-keys", *keys], check=True, timeout=30)

    def close(self) -> None:
        """End the server and all it runs."""
        subprocess.run([*self.tmux, "kill-server"], check=False, timeout=30)


needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux")


@pytest.mark.slow
@needs_tmux
def test_the_whole_command_on_an_80_column_terminal(tmp_path: Path) -> None:
    """`ssegrade batch` in a tmux pane of 80 columns: the bar is on the screen once, each
    failed job has its line with its reason, every job is counted in the last line."""
    made = make_task(tmp_path / "t")
    jobs = write_jobs(
        tmp_path,
        made,
        {"fixed": fix_to("fixed"), "stale": fix_to("x").replace("bug", "old"), "empty": ""},
    )
    results = tmp_path / "results"
    pane = Pane(
        tmp_path,
        shlex.join([*CLI, "batch", str(jobs), "--results", str(results), "--workers", "2"]),
    )
    try:
        screen = pane.wait_for("EXIT=")
    finally:
        pane.close()
    assert "EXIT=0" in screen, screen
    assert screen.count("grading ") == 1, screen
    assert all(len(line) <= 80 for line in screen.splitlines())
    flat = " ".join(screen.split())
    assert "failed shell-001/unknown/unknown/stale (" in flat
    assert "s): Patch apply failed" in flat
    assert "failed shell-001/unknown/unknown/empty (" in flat
    assert "s): PoC failed: pocs/poc1.bin" in flat
    assert "passed shell-001/unknown/unknown/fixed" not in flat
    assert "3 graded, 1 passed, 2 failed, 0 error, 0 cached, 0 skipped in" in flat
    bar = next(line for line in screen.splitlines() if line.startswith("grading "))
    assert len(TIME.findall(bar)) == 2, bar


@pytest.mark.slow
@needs_tmux
def test_ctrl_c_on_an_80_column_terminal_says_what_is_left(tmp_path: Path) -> None:
    """Ctrl-C typed in the pane while one of three jobs runs: the notice and the last line
    wrap at words (never mid-word), the bar is on the screen once, and the last line says
    that 2 jobs never started and that the same command resumes."""
    state = tmp_path / "state"
    state.mkdir()
    state.chmod(0o755)
    tmp_path.chmod(0o755)
    made = holding_task(
        tmp_path / "t", 'while [ ! -e "$BATCH_STATE/release" ]; do sleep 0.05; done'
    )
    jobs = write_jobs(tmp_path, made, {n: fix_to(f"fixed{n}") for n in "abc"})
    results = tmp_path / "results"
    command = [*CLI, "batch", str(jobs), "--results", str(results), "--workers", "1"]
    pane = Pane(
        tmp_path,
        f"BATCH_STATE={shlex.quote(str(state))} {shlex.join(command)} " + " ".join(SCRIPT_ENV),
    )
    try:
        wait_until(
            lambda: marked(state / "ready-fixeda"), "the first build", 120, 0.05, pane.screen
        )
        pane.keys("C-c")
        pane.wait_for("Ctrl-C or SIGTERM again", 60)
        (state / "release").touch()
        screen = pane.wait_for("EXIT=")
    finally:
        pane.close()
    assert "EXIT=130" in screen, screen
    assert sum(line.startswith("grading ") for line in screen.splitlines()) == 1, screen
    flat = " ".join(screen.split())
    assert "interrupted: waiting for 1 running grading (Ctrl-C or SIGTERM again to kill it)" in flat
    assert "; interrupted: 2 jobs never started; the same command resumes" in flat
    assert all(len(line) <= 80 for line in screen.splitlines())


def test_a_job_line_names_the_guard_flags_of_a_pass_and_why_a_job_did_not_pass() -> None:
    """Off a terminal the job's line is all there is: a flagged pass is not a plain pass, and
    a failure or an error says why."""
    flagged = {
        "patch_result": {"status": "passed"},
        "guard": {"checked": True, "flags": [{"kind": "sanitizer"}, {"kind": "tests"}]},
    }
    assert job_verdict("passed", flagged) == ("passed, flagged sanitizer tests", "")
    assert job_verdict("passed", {"guard": {"checked": True, "flags": []}}) == ("passed", "")
    timeout = {"patch_result": {"status": "error", "error_msg": "Timeout (3s)"}}
    assert job_verdict("error", timeout) == ("error", ": Timeout (3s)")
    assert job_verdict("failed", {"patch_result": "junk"}) == ("failed", "")
