"""SSEBench's wire on a real daemon: its clients' calls, in their order, on real sockets.

`SdkClient` sends what SSEBench's Python SDK sends (a JSON body on every POST, the error body's
`error` raised) and loads replies as the SDK does (`Class(**data)`); `grade_like_ssebench` walks
the grading steps of SSEBench's evaluator as its SDK does them (prepare, then build, every PoC
by path alone, functional and intent tests, a `git apply failed` error read as a failed step).
Its grade must equal what `ssegrade evaluate --daemon` writes for the same tree. The agent's
`bash` tool runs as the agent's account (a throwaway one: never root, never the runner's), in
the source tree, and closes when the entrypoint says the agent exited.
"""

from __future__ import annotations

import json
import os
import pwd
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.agentaccounts import agent_account
from tests.support.daemons import RunningDaemon, start_daemon
from tests.support.realtask import RealTask, make_task, ssegrade
from tests.support.sdkclient import SdkClient, SdkError, grade_like_ssebench
from tests.support.ssebench_wire import CAPABILITIES, METADATA, SCRIPT_RESULT

pytestmark = pytest.mark.slow


def clients(running: RunningDaemon) -> tuple[SdkClient, SdkClient]:
    """SDK-like clients of the agent-facing and admin sockets (closed with the daemon)."""
    made = [running.http(listener, prefix="") for listener in ("agent", "admin")]
    OPENED.setdefault(id(running), []).extend(made)
    return SdkClient(made[0]), SdkClient(made[1])


def evaluate_through(made: RealTask, running: RunningDaemon) -> dict[str, Any]:
    done = ssegrade(
        "evaluate",
        "--task",
        str(made.task),
        "--source",
        str(made.source),
        "--results",
        str(made.results),
        "--daemon",
        str(running.admin),
    )
    assert done.returncode == 0, done.stderr
    patch: dict[str, Any] = json.loads((made.results / "result.json").read_bytes())["patch_result"]
    return patch


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    return tmp_path


@pytest.fixture
def daemons() -> Iterator[list[RunningDaemon]]:
    """Daemons started by a test, and the wire clients opened on them: all closed after it."""
    started: list[RunningDaemon] = []
    yield started
    for running in started:
        for opened in OPENED.pop(id(running), []):
            opened.close()
        running.cleanup()


OPENED: dict[int, list[httpx.Client]] = {}


def launch(
    daemons: list[RunningDaemon], made: RealTask, *args: str, level: str = "2"
) -> RunningDaemon:
    running = start_daemon(made.task, made.source, made.results, *args, level=level)
    daemons.append(running)
    return running


@pytest.fixture
def agent_user() -> Iterator[str]:
    """The account of the agent's shell (not root: this user, the shell runs as it)."""
    if os.geteuid() != 0:
        yield pwd.getpwuid(os.geteuid()).pw_name
        return
    with agent_account() as entry:
        yield entry.pw_name


def test_an_agent_and_the_entrypoint_through_the_wire(
    workdir: Path, daemons: list[RunningDaemon], agent_user: str
) -> None:
    made = make_task(workdir / "t")
    running = launch(daemons, made, "--agent-user", agent_user, level="2")
    agent, admin = clients(running)
    assert set(agent.get("/version")) == {"version"}
    meta = agent.get("/project")
    assert set(meta) == METADATA
    assert meta["source"] == str(made.source)
    assert set(agent.get("/capabilities")) == CAPABILITIES
    assert agent.tool("bencher", "build", {"grading": False}).code == 0
    assert agent.tool("bencher", "function_test", {"grading": False}).code == 0
    with pytest.raises(SdkError, match="action 'run_poc' is not available"):
        agent.tool("bencher", "run_poc", {"poc": meta["poc"][0]})
    with pytest.raises(SdkError, match="grading checks are only available on the admin socket"):
        agent.tool("bencher", "build", {"grading": True})

    # The bash tool: one shell, in the source tree, as the agent's account.
    who = agent.tool("bash", "execute", {"command": "pwd; id -u; cd tests; export MARK=1"})
    uid = pwd.getpwnam(agent_user).pw_uid
    assert (who.code, who.stdout) == (0, f"{made.source}\n{uid}\n")
    assert uid != 0
    command = 'pwd; echo "$MARK"; echo oops >&2; (exit 4)'
    again = agent.tool("bash", "execute", {"command": command})
    assert (again.code, again.stdout, again.stderr) == (4, f"{made.source}/tests\n1\n", "oops\n")
    reply = agent.http.post("/tool/bash?action=execute", json={"command": "true"})
    assert set(reply.json()) == SCRIPT_RESULT

    # The entrypoint ends the agent phase: tools closed on the agent socket, the shell killed.
    assert admin.post("/admin/agent_exited", {}) == {"success": True}
    with pytest.raises(SdkError, match=r"^tools are unavailable after the agent phase$"):
        agent.tool("bash", "execute", {"command": "true"})
    with pytest.raises(SdkError, match=r"^tools are unavailable after the agent phase$"):
        agent.tool("bencher", "build", {"grading": False})
    with pytest.raises(SdkError, match=r"^bash process has died$"):
        admin.tool("bash", "execute", {"command": "true"})
    assert agent.get("/result") == {"available": False}
    assert agent.get("/final_diff") == {"diff": ""}


@pytest.mark.parametrize("value", ["fixed", "bug", "broken"])
def test_the_evaluators_grade_equals_evaluate_daemon(
    workdir: Path, daemons: list[RunningDaemon], value: str
) -> None:
    """SSEBench's evaluator's steps (the PoCs by path alone, after `prepare_grading`) grade the
    tree as `ssegrade evaluate --daemon` does: every field but the log."""
    made = make_task(workdir / "t")
    running = launch(daemons, made, level="2")
    made.set_value(value)
    agent, admin = clients(running)
    assert admin.post("/admin/agent_exited", {}) == {"success": True}
    theirs = grade_like_ssebench(admin)
    ours = evaluate_through(made, running)
    ours.pop("error_log")
    assert theirs == ours
    assert theirs["status"] == ("passed" if value == "fixed" else "failed")
    result = agent.get("/result")
    assert result["available"] is True
    assert result["patch_result"]["status"] == ours["status"]


def test_a_patch_that_does_not_apply(workdir: Path, daemons: list[RunningDaemon]) -> None:
    made = make_task(workdir / "t")
    repo = workdir / "repo"
    shutil.copytree(made.source, repo, ignore=shutil.ignore_patterns(".git"))
    (repo / "lib.sh").write_text("VALUE=elsewhere\n")
    running = launch(daemons, made, "--repo", str(repo), level="2")
    made.set_value("fixed")
    _, admin = clients(running)
    with pytest.raises(SdkError, match=r"^git apply failed: "):
        admin.post("/prepare_grading", {})
    theirs = grade_like_ssebench(admin)
    ours = evaluate_through(made, running)
    assert theirs["error_msg"] == ours["error_msg"] == "Patch apply failed"
    assert theirs["status"] == ours["status"] == "failed"


def test_a_script_that_cannot_start_is_500(workdir: Path, daemons: list[RunningDaemon]) -> None:
    made = make_task(workdir / "t")
    (made.task / "scripts" / "build.sh").write_text("echo no shebang\n")
    (made.task / "scripts" / "build.sh").chmod(0o644)
    running = launch(daemons, made, level="0")
    _, admin = clients(running)
    with pytest.raises(SdkError, match=r"^cannot start "):
        admin.tool("bencher", "build", {"grading": False})
