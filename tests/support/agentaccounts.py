"""Throwaway accounts for the agent's bash tool (root only): one per use, never the runner's.

The agent phase ends by killing every process of the agent's account, so a test that plays
the agent must own its account: any shared one (the runner's) would have other tests'
processes killed under them.
"""

from __future__ import annotations

import contextlib
import pwd
import secrets
import shutil
import subprocess
import time
from collections.abc import Iterator

from interpreters.real.runner.account import TOOL_ENV
from interpreters.real.runner.processes import kill_account

_BUSY = (1, 10)
"""useradd/userdel: cannot lock or update the account files (another one is at work)."""


def _tool(*argv: str) -> subprocess.CompletedProcess[str]:
    """Run an account tool, again while another holds the account files' lock."""
    deadline = time.monotonic() + 60
    while True:
        done = subprocess.run(argv, env=TOOL_ENV, capture_output=True, text=True, check=False)
        if done.returncode not in _BUSY or time.monotonic() > deadline:
            return done
        time.sleep(0.1)


@contextlib.contextmanager
def agent_account() -> Iterator[pwd.struct_passwd]:
    """A new system account with a group of its own, removed (with its processes) after."""
    useradd = shutil.which("useradd", path=TOOL_ENV["PATH"])
    userdel = shutil.which("userdel", path=TOOL_ENV["PATH"])
    assert useradd is not None, "useradd is needed"
    assert userdel is not None, "userdel is needed"
    name = f"sse-agent-{secrets.token_hex(4)}"
    made = _tool(
        useradd,
        "--system",
        "--user-group",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        "/usr/sbin/nologin",
        name,
    )
    assert made.returncode == 0, made.stderr
    entry = pwd.getpwnam(name)
    try:
        yield entry
    finally:
        kill_account(entry.pw_uid, entry.pw_gid)
        _tool(userdel, name)
