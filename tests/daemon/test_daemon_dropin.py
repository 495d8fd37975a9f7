"""The drop-in `docs/ssebench/ssebench-daemon` where nothing made the admin socket's folder.

SSEBench's entrypoint makes the admin socket's folder before it starts the daemon; a test
harness (SSEBench's own SDK test among them) does not. The script makes a missing folder
itself, root's and mode 0700, and writes nothing into a folder others can enter: the daemon
then refuses it in one line that names where the socket should go.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.realtask import RealTask, make_task
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the script runs as root, as in the image"),
]

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "ssebench" / "ssebench-daemon"


@pytest.fixture
def short() -> Iterator[Path]:
    """A short private folder for the sockets (a Unix socket path is at most 107 bytes)."""
    folder = Path(tempfile.mkdtemp(prefix="sse-dropin-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


def _env(made: RealTask, agent: Path, admin: Path) -> dict[str, str]:
    config = made.task / "config.yaml"
    config.write_text(config.read_text() + f"source: {made.source}\n")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SSE_BENCH_PATH": str(made.task),
        "SSE_DAEMON_SOCKET": str(agent),
        "SSE_ADMIN_SOCKET": str(admin),
        "SSE_RESULTS": str(made.results),
        "SSE_ARCHIVE": str(made.root / "archive"),
        "SSE_DIFFICULTY": "2",
    }
    env.pop("SSE_REPO_PATH", None)
    return env


def test_the_script_makes_a_missing_admin_folder_root_only(tmp_path: Path, short: Path) -> None:
    made = make_task(tmp_path / "t")
    admin = short / "nothing-yet" / "admin" / "admin.sock"
    env = _env(made, short / "agent.sock", admin)
    with (tmp_path / "log").open("wb") as log:
        daemon = subprocess.Popen([str(SCRIPT)], env=env, stdout=log, stderr=subprocess.STDOUT)
    try:

        def listening() -> bool:
            assert daemon.poll() is None, (tmp_path / "log").read_text()
            return (short / "agent.sock").exists()

        wait_until(listening, "the agent-facing socket", 120, 0.05)
        info = admin.parent.lstat()
        assert stat.S_ISDIR(info.st_mode)
        assert (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid) == (0o700, 0, 0)
        transport = httpx.HTTPTransport(uds=str(admin))
        with httpx.Client(transport=transport, base_url="http://d") as client:
            assert client.get("/version").status_code == 200
        assert (admin.parent / "results-owner").read_text().strip() == "0:0"
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)


def test_an_admin_folder_open_to_others_is_refused_and_left_alone(
    tmp_path: Path, short: Path
) -> None:
    made = make_task(tmp_path / "t")
    env = _env(made, short / "agent.sock", short / "admin.sock")
    done = subprocess.run(
        [str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"ssegrade: error: admin socket folder {short} must be mode 0700")
    assert lines[0].endswith(
        "give the socket a folder of its own, e.g. --admin-socket "
        "/run/ssebench-admin/admin.sock (made with mode 0700 when missing)"
    )
    assert sorted(short.iterdir()) == []
