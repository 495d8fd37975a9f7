"""The source archive (SPEC §6): `source.tar.gz` of the agent's tree, whole or absent, written
in a child process while grading runs, reusing the baseline's archive cache.

Interpreter layer (files, processes). The tree is hostile and may change meanwhile: it is
walked by directory descriptors (`interpreters.real.files.descriptors`), following no link.

| module | its one job |
|---|---|
| `tarstream` | a tree as a tar stream |
| `compression` | gzip compressed on `WORKERS` threads, stored where deflate does not pay |
| `cache` | the baseline's archive cache, and the archiver that reuses its pieces |
| `split` | the archive's parts walked by forked workers at once, put together in order |
| `child` | the archive's child process: started, given its job, begun ahead on a hint |
| `archiving` | `archive` and `start_archive`: the archive, here or in the child |

Each name is loaded from its module on first use: `child` is imported before anything else
(`interpreters.cli.entry`), standard library only, and must not load the rest.
"""

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from interpreters.real.archive.archiving import (
        ARCHIVE_LEVEL,
        ArchiveProcess,
        archive,
        start_archive,
    )
    from interpreters.real.archive.cache import CACHE_NAME, record_archive_cache

__all__ = [
    "ARCHIVE_LEVEL",
    "CACHE_NAME",
    "ArchiveProcess",
    "archive",
    "record_archive_cache",
    "start_archive",
]

_HOMES = {
    "ARCHIVE_LEVEL": "interpreters.real.archive.archiving",
    "ArchiveProcess": "interpreters.real.archive.archiving",
    "archive": "interpreters.real.archive.archiving",
    "start_archive": "interpreters.real.archive.archiving",
    "CACHE_NAME": "interpreters.real.archive.cache",
    "record_archive_cache": "interpreters.real.archive.cache",
}

lazy_face(__name__, _HOMES)
