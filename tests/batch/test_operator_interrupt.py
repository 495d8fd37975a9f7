"""Ctrl-C on a batch of one running grading, as an operator reads it: the first says it waits
for `1 running grading` (and how to kill it), the second, on the last line, that `1 running
grading` was killed, how many jobs never started and that the same command resumes. A real
batch command in a session of its own, signalled as a terminal does (its process group)."""

from __future__ import annotations

import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tests.support.batchkit import SCRIPT_ENV, holding_task
from tests.support.realtask import fix_to, write_jobs
from tests.support.scriptmarks import marked

CLI = [sys.executable, "-c", "from interpreters.cli.main import main; main()"]


def test_two_ctrl_c_on_one_running_grading_read_in_the_singular(tmp_path: Path) -> None:
    state = Path(tempfile.mkdtemp(prefix="op-int-", dir="/tmp"))
    state.chmod(0o755)
    token = f"{secrets.randbelow(10**6) + 1000}.{secrets.randbelow(10**6)}"
    made = holding_task(tmp_path / "t", f"exec sleep {token}")
    jobs = write_jobs(tmp_path, made, {n: fix_to(f"fixed{n}") for n in ("a", "b")})
    proc = subprocess.Popen(
        [*CLI, "batch", str(jobs), "--results", str(tmp_path / "r"), "--workers", "1", *SCRIPT_ENV],
        env={**os.environ, "BATCH_STATE": str(state)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 120
        while not (marked(state / "ready-fixeda") or marked(state / "ready-fixedb")):
            assert proc.poll() is None
            assert time.monotonic() < deadline
            time.sleep(0.02)
        os.killpg(proc.pid, signal.SIGINT)
        first = proc.stderr.readline()
        assert first == (
            "interrupted: waiting for 1 running grading (Ctrl-C or SIGTERM again to kill it)\n"
        )
        os.killpg(proc.pid, signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=120) == 130, rest
        assert re.fullmatch(
            r"0 graded, 0 passed, 0 failed, 0 error, 0 cached, 0 skipped in [0-9.]+ s; "
            r"interrupted: 1 running grading killed, folders removed, 1 job never started; "
            r"the same command resumes\n",
            rest,
        ), rest
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if proc.stderr is not None:
            proc.stderr.close()
        shutil.rmtree(state)
