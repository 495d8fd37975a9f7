"""A start the daemon refuses leaves no agent-facing socket, and says why in one line.

The agent-facing socket is bound only once every check has passed and the baseline is in
(`interpreters.daemon.startup`); an entrypoint would start the agent the moment it exists. A
refused start (a bad task, a bad difficulty level, an admin folder others can enter, a source
tree that is no repository) exits 2 with one line on stderr and never binds it. Real daemon
processes; their own short folders.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemons import TOP, daemon_command
from tests.support.realtask import make_task

pytestmark = pytest.mark.slow


@pytest.fixture
def folder() -> Iterator[Path]:
    made = Path(tempfile.mkdtemp(prefix="sse-refused-", dir="/tmp"))
    made.chmod(0o755)
    try:
        yield made
    finally:
        shutil.rmtree(made, ignore_errors=True)


def _break(what: str, task: Path, source: Path, admin: Path) -> str:
    """Make the start refused for `what`; the difficulty level to start with."""
    if what == "task":
        (task / "config.yaml").write_text("id: [unclosed\n")
    elif what == "admin-folder":
        admin.parent.mkdir(mode=0o755)
        admin.parent.chmod(0o755)
    elif what == "source":
        shutil.rmtree(source / ".git")
    return "9" if what == "difficulty" else "0"


@pytest.mark.parametrize("what", ["task", "difficulty", "admin-folder", "source"])
def test_a_refused_start_binds_no_agent_socket(folder: Path, what: str) -> None:
    made = make_task(folder / "t")
    agent, admin = folder / "s" / "agent.sock", folder / "a" / "admin.sock"
    level = _break(what, made.task, made.source, admin)
    command = daemon_command(made.task, made.source, made.results)
    command += ["--agent-socket", str(agent), "--admin-socket", str(admin)]
    env = {**os.environ, "SSE_DIFFICULTY": level}
    done = subprocess.run(
        command, cwd=TOP, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("ssegrade: error: "), lines
    assert "Traceback" not in done.stderr
    assert not agent.exists()
    assert not admin.exists()
