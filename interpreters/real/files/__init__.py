"""Real file operations: fresh copies and copy-on-write views of a tree, the source archive,
atomic writes, removal.

Interpreter layer (performs I/O). The trees it reads are hostile and may change meanwhile: every
walk works on directory file descriptors (`descriptors`), follows no symlink and looks no path
up twice.

| module | its one job |
|---|---|
| `descriptors` | what the walks share: open flags, the check between steps, sizes |
| `data` | copying one file's data in the kernel |
| `fresh` | `fresh_copy`: a copy of a tree, walked by descriptors on `WORKERS` threads |
| `views` | copy-on-write views of the patched grading repo: their layers, mounts and probe |
| `mounts` | the mount system calls a view needs, callable between fork and exec |
| `idmap` | the user namespace of an idmapped mount |
| `compression` | gzip compressed on `WORKERS` threads, stored where deflate does not pay |
| `tarstream` | a tree as a tar stream |
| `archive_cache` | the baseline's archive cache, and the archiver that reuses its pieces |
| `split_archive` | the archive's parts walked by forked workers at once, put together in order |
| `archiving` | `archive` and `start_archive`: the source archive, whole or absent |
| `atomic` | `atomic_write` |
| `removal` | `remove_tree`, and `remove_later` in a process of its own |
"""

from interpreters.real.files.archive_cache import CACHE_NAME, record_archive_cache
from interpreters.real.files.archiving import ARCHIVE_LEVEL, ArchiveProcess, archive, start_archive
from interpreters.real.files.atomic import atomic_write
from interpreters.real.files.fresh import fresh_copy
from interpreters.real.files.removal import remove_later, remove_tree

__all__ = [
    "ARCHIVE_LEVEL",
    "CACHE_NAME",
    "ArchiveProcess",
    "archive",
    "atomic_write",
    "fresh_copy",
    "record_archive_cache",
    "remove_later",
    "remove_tree",
    "start_archive",
]
