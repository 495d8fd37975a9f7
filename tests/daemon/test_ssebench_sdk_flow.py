"""SSEBench's SDK integration test, rebuilt: its calls in its order against the drop-in daemon.

SSEBench checks its SDK against its daemon by starting the daemon binary with its settings in
the environment only, waiting a fixed 2 s, and then driving every call through the admin socket
as its evaluator does: the bash tool (a command's output, a failing command's status), each
bencher action on the unfixed project (the build passes, the PoC still triggers, the functional
and intent tests fail), the capabilities, the final diff before grading, the live diff after
the agent committed some changes and left others unstaged and untracked (a gitignored build
folder left out), then grading itself, and an invalid action's error. Here the daemon is
`docs/ssebench/ssebench-daemon`, as a task image runs it.

Where ssegrade's deployment differs, and only there (`docs/ssebench/README.md`): the admin
socket lies in a folder of its own (SSEBench's test puts it in `/tmp`, which others can
enter: ssegrade refuses that); the task is a shell task in the place of its Go one (same
outcomes); and grading leaves the grading repo as it was (ssegrade applies the patch in each
fresh copy, never in the grading repo, so the check that the marker reached the repo is a
check that the grade saw the patch).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.agentaccounts import agent_account
from tests.support.realtask import git, make_task
from tests.support.sdkclient import SdkClient, SdkError, grade_like_ssebench

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="the daemon runs as root, as in the image"),
]

SCRIPT = Path(__file__).resolve().parents[2] / "docs" / "ssebench" / "ssebench-daemon"
FAILS_UNFIXED = """#!/bin/sh
. ./lib.sh
[ "$VALUE" = fixed ] || { echo "panic: runtime error: slice bounds out of range" >&2; exit 1; }
"""
EXPECTED_CAPABILITIES = {
    "can_build": True,
    "can_run_poc": True,
    "poc_count": 1,
    "has_function_test": True,
    "has_intent_test": True,
}


@pytest.fixture
def short() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="sse-sdk-", dir="/tmp"))
    folder.chmod(0o755)
    yield folder
    subprocess.run(["rm", "-rf", "--", str(folder)], check=False)


def test_sdk_integration_flow(short: Path) -> None:
    tmp_path = short / "w"
    tmp_path.mkdir(mode=0o755)
    made = make_task(tmp_path / "t", pocs=1)
    made.script("run.sh", FAILS_UNFIXED)
    made.script("test.sh", FAILS_UNFIXED)
    config = made.task / "config.yaml"
    config.write_text(config.read_text() + f"source: {made.source}\n")
    git(made.source, "config", "user.email", "test@example.invalid")
    git(made.source, "config", "user.name", "Test")
    agent_sock, admin = short / "agent.sock", short / "admin" / "admin.sock"
    with agent_account() as account:
        owner = f"{account.pw_uid}:{account.pw_gid}"
        subprocess.run(["chown", "-R", owner, str(made.source)], check=True)
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
            "SSE_BENCH_PATH": str(made.task),
            "SSE_DAEMON_SOCKET": str(agent_sock),
            "SSE_ADMIN_SOCKET": str(admin),
            "SSE_RESULTS": str(made.results),
            "SSE_ARCHIVE": str(tmp_path / "archive"),
            "SSE_AGENT_USER": account.pw_name,
        }
        env.pop("SSE_REPO_PATH", None)
        env.pop("SSE_DIFFICULTY", None)
        with (tmp_path / "log").open("wb") as log:
            daemon = subprocess.Popen([str(SCRIPT)], env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            time.sleep(2)  # SSEBench's test waits this long, then asks
            assert daemon.poll() is None, (tmp_path / "log").read_text()
            transport = httpx.HTTPTransport(uds=str(admin))
            with httpx.Client(transport=transport, base_url="http://d", timeout=300) as http:
                _the_calls(SdkClient(http), made.source)
        finally:
            daemon.send_signal(signal.SIGTERM)
            assert daemon.wait(15) == 0, (tmp_path / "log").read_text()


def _the_calls(sdk: SdkClient, source: Path) -> None:
    hello = sdk.tool("bash", "execute", {"command": "echo 'hello world'"})
    assert hello.code == 0
    assert "hello world" in hello.stdout
    assert sdk.tool("bash", "execute", {"command": "(exit 42)"}).code == 42
    assert sdk.tool("bencher", "build", {}).code == 0
    poc = sdk.tool("bencher", "run_poc", {"poc": "pocs/poc1.bin"})
    assert poc.code != 0
    assert "slice bounds" in poc.stdout + poc.stderr
    assert sdk.tool("bencher", "function_test", {}).code != 0
    assert sdk.tool("bencher", "intent_test", {}).code != 0
    assert sdk.get("/capabilities") == EXPECTED_CAPABILITIES
    assert sdk.get("/final_diff") == {"diff": ""}

    for command in (
        f"echo '# integration-test-marker' >> {source}/lib.sh",
        f"echo 'build/' >> {source}/.gitignore",
        f"mkdir -p {source}/build && echo junk > {source}/build/output.bin",
        f"cd {source} && git add lib.sh && git commit -qm 'agent commit'",
        f"echo '# after-commit-marker' >> {source}/lib.sh",
        f"echo 'never staged' > {source}/untracked_note.txt",
    ):
        assert sdk.tool("bash", "execute", {"command": command}).code == 0, command
    diff = sdk.get("/diff")["diff"]
    for expected in ("integration-test-marker", "after-commit-marker", "b/untracked_note.txt"):
        assert expected in diff
    assert "output.bin" not in diff
    files = {f["path"]: f["status"] for f in sdk.get("/files")["files"]}
    assert files["untracked_note.txt"] == "added"
    assert files["lib.sh"] == "modified"

    grade = grade_like_ssebench(sdk)
    assert sdk.tool("bash", "execute", {"command": f"test -d {source}/build"}).code == 0
    final = sdk.get("/final_diff")["diff"]
    for expected in ("integration-test-marker", "after-commit-marker", "b/untracked_note.txt"):
        assert expected in final
    assert grade["build_success"] is True
    assert (grade["pov_total"], grade["pov_passed"]) == (1, 0)
    assert grade["func_test_success"] is False
    assert grade["intent_test_success"] is False
    assert grade["error_msg"] is not None

    with pytest.raises(SdkError, match="invalid action"):
        sdk.tool("bencher", "invalid_action_xyz", {})
