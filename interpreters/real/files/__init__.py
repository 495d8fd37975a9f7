"""Real file operations: fresh copies and copy-on-write views of a tree, atomic writes,
removal (the source archive, which walks trees the same way, is `interpreters.real.archive`).

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
| `atomic` | `atomic_write` |
| `removal` | `remove_tree`, and `remove_later` in a process of its own |
| `reading` | the start of a planted file, bounded, never through a link |
"""

from interpreters.real.files.atomic import atomic_write
from interpreters.real.files.fresh import fresh_copy
from interpreters.real.files.removal import remove_later, remove_tree

__all__ = [
    "atomic_write",
    "fresh_copy",
    "remove_later",
    "remove_tree",
]
