"""The recipe of docs/operators.md: ssegrade in the place of SSEBench's daemon and evaluator.

SSEBench's entrypoint is played here step by step, as its sources do it: the daemon binary
(`docs/ssebench/ssebench-daemon`) started with no arguments and its settings in the
environment, the admin socket's folder made root-only first, the results folder owned by the
host user in a root-only parent; the agent's tool calls on the agent socket; `POST
/admin/agent_exited` with `{}` on the admin socket; then the evaluator (`docs/ssebench/main.py`)
with `SSE_DAEMON_SOCKET` pointing at the admin socket. The grade must be written and the
results folder given back to its owner.
"""

from __future__ import annotations

import json
import os
import pwd
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.agentaccounts import agent_account
from tests.support.realtask import make_task
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the recipe runs as root, as in the image"),
]

DOCS = Path(__file__).resolve().parents[2] / "docs" / "ssebench"


@pytest.fixture
def host_user() -> Iterator[pwd.struct_passwd]:
    """Plays the host user who owns the run folder, and the agent's account (its own: the
    agent phase ends by killing every process of it)."""
    with agent_account() as entry:
        yield entry


def wire(sock: Path) -> httpx.Client:
    return httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://d")


def test_the_recipe_grades_and_gives_the_results_back(
    tmp_path: Path, host_user: pwd.struct_passwd
) -> None:
    tmp_path.chmod(0o755)
    made = make_task(tmp_path / "t")
    config = made.task / "config.yaml"
    config.write_text(config.read_text() + f"source: {made.source}\n")
    run = tmp_path / "run"
    run.mkdir(mode=0o700)
    parent = tmp_path / "var"
    parent.mkdir(mode=0o700)
    results = parent / "results"
    results.mkdir(mode=0o755)
    host = host_user
    os.chown(results, host.pw_uid, host.pw_gid)
    (results / "daemon.log").write_text("")  # the entrypoint's logs are there first
    agent_sock, admin_sock = tmp_path / "sse.sock", run / "admin.sock"
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SSE_BENCH_PATH": str(made.task),
        "SSE_DAEMON_SOCKET": str(agent_sock),
        "SSE_ADMIN_SOCKET": str(admin_sock),
        "SSE_RESULTS": str(results),
        "SSE_ARCHIVE": str(tmp_path / "archive"),
        "SSE_DIFFICULTY": "2",
        "SSE_AGENT_USER": host_user.pw_name,
    }
    env.pop("SSE_REPO_PATH", None)
    with (results / "daemon.log").open("ab") as log:
        daemon = subprocess.Popen(
            [str(DOCS / "ssebench-daemon")], env=env, stdout=log, stderr=subprocess.STDOUT
        )
    try:

        def listening() -> bool:
            assert daemon.poll() is None, (results / "daemon.log").read_text()
            return agent_sock.exists()

        wait_until(listening, "the agent-facing socket", 120, 0.05)
        with wire(agent_sock) as agent, wire(admin_sock) as admin:
            caps = agent.get("/capabilities").json()
            assert caps["can_build"] is True
            assert (
                agent.post("/tool/bencher?action=build", json={"grading": False}).json()["code"]
                == 0
            )
            made.set_value("fixed")  # the agent's fix
            shell = agent.post("/tool/bash?action=execute", json={"command": "id -u"}).json()
            assert shell["stdout"] == f"{host.pw_uid}\n"
            exited = admin.post("/admin/agent_exited", json={})
            assert exited.json() == {"success": True}
        graded = subprocess.run(
            [sys.executable, str(DOCS / "main.py")],
            env={
                **env,
                "SSE_DAEMON_SOCKET": str(admin_sock),
                "AGENT_DURATION": "42",
                "AGENT_EXIT_STATUS": "0",
            },
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert graded.returncode == 0, graded.stderr
    finally:
        daemon.send_signal(signal.SIGTERM)
        daemon.wait(60)
    result = json.loads((results / "result.json").read_bytes())
    assert result["patch_result"]["status"] == "passed", result
    assert result["runtime_result"]["agent_duration"] == 42
    assert (results / "final.patch").read_text().endswith("+VALUE=fixed\n")
    assert results.stat().st_uid == host.pw_uid
    for here, folders, names in os.walk(results):
        for name in (*folders, *names):
            assert (Path(here) / name).lstat().st_uid == host.pw_uid, name
