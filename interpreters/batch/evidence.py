"""What `verify` quotes of a failing check: the first lines of its log, made inert.

Interpreter layer (files). A script's log (`interpreters.real.runner`) starts with how the
script ran (command, user, environment…), then its exit code, then what it printed; a patch
check's log holds git's command and answer. `log_head` answers the exit code, whether it was
killed and the first lines the script printed (or, in a log of another shape, its first
lines), with control characters escaped: what a task's script printed never drives the
author's terminal.
"""

from __future__ import annotations

import os

__all__ = ["HEAD_LINES", "head_of", "log_head"]

HEAD_LINES = 6
"""Lines quoted of a failing check's log."""
_READ = 64 << 10
_WIDTH = 200


def _inert(line: str) -> str:
    shown = "".join(
        char
        if char.isprintable() or char == "\t"
        else f"\\x{ord(char):02x}"
        if ord(char) < 0x100
        else f"\\u{ord(char):04x}"
        for char in line
    )
    return shown if len(shown) <= _WIDTH else shown[: _WIDTH - 1] + "…"


def head_of(text: str, lines: int = HEAD_LINES) -> tuple[str, ...]:
    """The first lines worth quoting of a log's text.

    >>> log = "label: build\\ncommand: b.sh\\nexit code: 2\\nkilled: no\\n--- stdout (0 bytes) ---"
    >>> head_of(log + "\\n--- stderr (9 bytes) ---\\nbroken!\\n--- end ---\\n")
    ('exit code: 2', 'broken!')
    >>> head_of("$ git apply --check final.patch\\nerror: patch failed: a.c:3\\n", 1)
    ('$ git apply --check final.patch',)
    """
    every = text.splitlines()
    if not any(line.startswith("--- stdout") for line in every):
        return tuple(_inert(line) for line in every if line.strip())[:lines]
    found = [line for line in every if line.startswith("exit code:") or line == "killed: yes"]
    printed = False
    for line in every:
        if line.startswith(("--- stdout", "--- stderr")):
            printed = True
        elif line == "--- end ---":
            break
        elif printed and line.strip():
            found.append(line)
    return tuple(_inert(line) for line in found[:lines])


def log_head(path: str | None, lines: int = HEAD_LINES) -> tuple[str, ...]:
    """The first lines worth quoting of the log file at `path` (a file of the results
    folder, never read through a link); none when there is no log or it cannot be read."""
    if path is None:
        return ()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return ()
    try:
        data = os.read(fd, _READ)
    except OSError:
        return ()
    finally:
        os.close(fd)
    return head_of(data.decode(errors="replace"), lines)
