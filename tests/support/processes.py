"""Processes of the tests: the runner account they share, scripts written to disk, and the
live processes that carry a test's own mark.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

# An account of their own, made the way `sse-runner` is (as a missing default). Nothing here
# depends on it being unused: no run signals a process outside its own containment.
TEST_RUNNER = "sse-runner-tests"


def write_script(folder: Path, body: str, *, name: str = "s.sh", mode: int = 0o755) -> Path:
    """Write a script into `folder` with `mode`; its path."""
    script = folder / name
    script.write_text(body)
    script.chmod(mode)
    return script


def unique() -> str:
    """Digits that mark the processes of one test: `sleep 300 0.<digits>` sleeps as long."""
    return str(secrets.randbelow(10**9)).rjust(9, "1")


def live_with(token: str) -> list[int]:
    """Pids of live (not zombie) processes whose command line holds `token`."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
            state = Path(f"/proc/{name}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmdline and state not in (b"Z", b"X"):
            found.append(int(name))
    return found
