"""The drop-ins (`docs/ssebench/ssebench-daemon`, `docs/ssebench/main.py`) with a run folder as
SSEBench's runner makes it: the host user's, with `archive/` and an empty `result.json`.

The daemon starts beside that folder (before: refused, "already holds result.json"), the
agent's phase ends on the admin socket, and the evaluator drop-in writes the grade into the
runner's own file, then gives the folder back to its owner. The same in a real container is
`tests/daemon/test_ssebench_container.py`; this one needs no engine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.realtask import make_task
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the drop-ins run as root, as in the image"),
]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ssebench"
HOST_USER = 1000


@pytest.fixture
def short() -> Iterator[Path]:
    """A short folder for the sockets (a Unix socket path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="sse-inplace-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


def test_the_drop_ins_grade_into_the_runners_empty_result_json(tmp_path: Path, short: Path) -> None:
    made = make_task(tmp_path / "t", pocs=1)
    config = made.task / "config.yaml"
    config.write_text(config.read_text() + f"source: {made.source}\n")
    run = made.results
    (run / "archive").mkdir(parents=True)
    (run / "result.json").touch()
    for path in (run, run / "archive", run / "result.json"):
        os.chown(path, HOST_USER, HOST_USER)
    premade = (run / "result.json").stat()
    admin = short / "admin" / "admin.sock"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SSE_BENCH_PATH": str(made.task),
        "SSE_DAEMON_SOCKET": str(short / "agent.sock"),
        "SSE_ADMIN_SOCKET": str(admin),
        "SSE_RESULTS": str(run),
        "SSE_ARCHIVE": str(run / "archive"),
    }
    env.pop("SSE_REPO_PATH", None)
    env.pop("SSE_DIFFICULTY", None)
    with (tmp_path / "log").open("wb") as log:
        daemon = subprocess.Popen(
            [str(DOCS / "ssebench-daemon")], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:

        def listening() -> bool:
            assert daemon.poll() is None, (tmp_path / "log").read_text()
            return (short / "agent.sock").exists()

        wait_until(listening, "the agent-facing socket", 120, 0.05)
        made.set_value("fixed")  # the agent's work
        transport = httpx.HTTPTransport(uds=str(admin))
        with httpx.Client(transport=transport, base_url="http://d", timeout=60) as client:
            assert client.get("/result").json() == {"available": False}
            assert client.post("/admin/agent_exited", json={}).json() == {"success": True}
        evaluator = subprocess.run(
            [sys.executable, str(DOCS / "main.py")],
            env={**env, "SSE_DAEMON_SOCKET": str(admin), "AGENT_EXIT_STATUS": "0"},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert evaluator.returncode == 0, evaluator.stderr
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    graded = (run / "result.json").stat()
    assert (graded.st_ino, graded.st_uid) == (premade.st_ino, HOST_USER)
    assert json.loads((run / "result.json").read_bytes())["patch_result"]["status"] == "passed"
    assert run.stat().st_uid == HOST_USER
    assert {p.stat().st_uid for p in run.rglob("*") if not p.is_symlink()} == {HOST_USER}
