"""Links from the HTML report to each run's files, relative to where the page is written.

Interpreter layer: this module looks at the file system (without following symbolic links: a
run folder's content may come from a hostile agent, and a link must not lead the reader out of
the run folder) and computes relative addresses; it reads no file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from urllib.parse import quote

__all__ = ["RUN_FILES", "run_links"]

RUN_FILES: tuple[tuple[str, str, bool], ...] = (
    ("result.json", "result.json", False),
    ("final.patch", "final.patch", False),
    ("guard.json", "guard.json", False),
    ("logs", "logs", True),
)
"""(shown name, name in the run folder, is a folder) of each file the page links to."""


def _present(path: str, folder: bool) -> bool:
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISDIR(mode) if folder else stat.S_ISREG(mode)


def run_links(
    results: str, folders: Iterable[str], page: str | None
) -> dict[str, list[tuple[str, str]]]:
    """For each run folder (below `results`), the (name, href) of its files that exist, each
    href relative to the folder of `page` (the current folder when the page goes to stdout)."""
    base = os.path.dirname(os.path.abspath(page)) if page not in (None, "-") else os.getcwd()
    root = os.path.abspath(results)
    links: dict[str, list[tuple[str, str]]] = {}
    for folder in folders:
        if not folder or folder in links:
            continue
        run = os.path.join(root, folder)
        found = []
        for shown, name, is_folder in RUN_FILES:
            target = os.path.join(run, name)
            if _present(target, is_folder):
                href = quote(os.path.relpath(target, base)) + ("/" if is_folder else "")
                found.append((shown, href))
        links[folder] = found
    return links
