"""How a contained script tells a test how far it got: in `full` containment it writes nothing
the host sees, so it starts a process whose command line carries a mark, which the test finds
in `/proc` while the script runs (the process dies with the script).

A test tells a script to go on by making a file in a folder the runner cannot write (root's,
0755): the script sees it at once, read-only.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.waiting import wait_until

__all__ = ["mark", "marked", "wait_for_mark"]


def mark(name: str) -> str:
    """The shell line that marks the running script with `name` (a path is unique enough;
    shell words in it are expanded, as `"$MARKS/ready-$VALUE"`)."""
    return f'sh -c "sleep 600; :" "mark:{name}" >/dev/null 2>&1 &'


def marked(name: str | Path) -> list[int]:
    """The live processes marked with `name` (its prefix, when it ends with `*`)."""
    wanted = os.fsencode(f"mark:{name}").removesuffix(b"*")
    exact = not os.fspath(name).endswith("*")
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state in (b"Z", b"X"):
            continue
        if any(w == wanted if exact else w.startswith(wanted) for w in words):
            found.append(int(pid))
    return found


def wait_for_mark(
    name: str | Path,
    proc: subprocess.Popen[Any],
    output: Callable[[], str] = str,
    seconds: float = 120,
) -> None:
    """Wait until a script is marked with `name`; fail with `output()` if `proc` (the process
    under test) ends first, or after `seconds`."""

    def seen() -> bool:
        assert proc.poll() is None, output()
        return bool(marked(name))

    wait_until(seen, f"a script marked {name}", seconds, detail=output)
