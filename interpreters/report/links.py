"""Links from the HTML report to each run's files, relative to where the page is written.

Interpreter layer: which files a run folder holds comes from the listing the report made while
reading it (`interpreters.report.io`, no link followed); this module computes relative
addresses, and checks the run folder a cached run names (`cached_from`, written by a batch but
read from a folder an agent could have touched) one part at a time without following a link,
so that a link never leads the reader out of the results folder. It reads no file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Collection
from urllib.parse import quote

__all__ = ["RUN_FILES", "Linker"]

RUN_FILES: tuple[tuple[str, str, bool], ...] = (
    ("result.json", "result.json", False),
    ("final.patch", "final.patch", False),
    ("guard.json", "guard.json", False),
    ("logs", "logs", True),
)
"""(shown name, name in the run folder, is a folder) of each file the page links to."""

_CHECKED = 4096
"""Cached runs' sources remembered (many runs may reuse one grade)."""


def _is_dir(path: str) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


class Linker:
    """The addresses of the files of the run folders below `results`, relative to the folder
    of `page` (the current folder when the page goes to stdout)."""

    def __init__(self, results: str, page: str | None) -> None:
        base = os.path.dirname(os.path.abspath(page)) if page not in (None, "-") else os.getcwd()
        self.root = os.path.abspath(results)
        relative = os.path.relpath(self.root, base)
        self._prefix = "" if relative == "." else quote(relative) + "/"
        self._sources: dict[str, str | None] = {}

    def href(self, folder: str, name: str = "", is_folder: bool = False) -> str:
        """The address of `name` in the run folder `folder` (below `results`)."""
        path = f"{folder}/{name}" if name else folder
        return self._prefix + quote(path) + ("/" if is_folder or not name else "")

    def links(self, folder: str, present: Collection[str]) -> list[tuple[str, str]]:
        """(shown name, address) of each of `RUN_FILES` the run folder holds."""
        if not present:
            return []
        base = self._prefix + quote(folder) + "/"  # the names in RUN_FILES need no quoting
        return [
            (shown, base + name + ("/" if is_folder else ""))
            for shown, name, is_folder in RUN_FILES
            if name in present
        ]

    def cached_logs(self, cached_from: str) -> str | None:
        """The address of the logs of the run whose grade a cached run reuses: `cached_from`
        must name a run folder below `results` (`<task>/<model…>/<agent>/<run id>`, no `.` or
        `..`), every part a real folder and its `logs` too; else None."""
        if cached_from in self._sources:
            return self._sources[cached_from]
        parts = cached_from.split("/")
        found = None
        if len(parts) >= 4 and all(p not in ("", ".", "..") and "\0" not in p for p in parts):
            path = self.root
            for part in (*parts, "logs"):
                path = os.path.join(path, part)
                if not _is_dir(path):
                    break
            else:
                found = self.href(cached_from, "logs", True)
        if len(self._sources) < _CHECKED:
            self._sources[cached_from] = found
        return found
