"""The fidelity proof (`ProvePatch`): the captured patch applied to its base gives its tree.

Interpreter side (processes, files); SPEC §4. The patch is applied to the base tree in a
scratch index, never to a work tree; the caller compares the tree id with the capture's.

The index (written and read back here) holds only what the patch touches: the base's
entries at the paths it names, which `git apply --cached` then changes, and the tree ids are
computed from the base's folders along
those paths (`trees.compose`), so the proof costs the patch's size, not the tree's. Where that
could differ from applying to the whole base (a path that is a folder in the base, a folder
whose place a file holds, a rename or copy, a name git's batch input cannot carry), and
whenever git refuses, the proof is made the whole way: the base read into the index, the
patch applied, the tree written.
"""

from __future__ import annotations

import time

from returns.result import Failure, Result, Success

from interpreters.real.git.command import GitError, Scratch, scratch, why
from interpreters.real.git.index_file import Entry as IndexEntry
from interpreters.real.git.index_file import index_bytes, load, new_entry, place, read_index
from interpreters.real.git.layout import lay_out
from interpreters.real.git.repository import Baseline
from interpreters.real.git.staging import split_z
from interpreters.real.git.trees import TREE, Unusual, ancestors, canonical, compose
from interpreters.real.git.trees import Entry as TreeEntry
from interpreters.real.git.trees import parse_tree as parse
from ssegrade.internal.effects import CaptureError
from ssegrade.internal.run import Deadline

_APPLY = ("apply", "--cached", "--binary", "--whitespace=nowarn", "--allow-empty")


def prove(
    baseline: Baseline,
    patch: bytes,
    base_tree: str,
    *,
    until: Deadline | None = None,
    whole: bool = False,
) -> Result[str, CaptureError]:
    """The fidelity proof: apply `patch` to `base_tree` in a scratch index; answer the tree id.

    The caller compares it with the capture's new tree. Killed at `until`, as `capture` is.
    With `whole`, the base is read into the index whole (the same answer, at the tree's cost).
    """
    try:
        with scratch(until=until) as s:
            repo = s.top / "repo"
            lay_out(repo)
            env = s.environment(
                repo,
                index=s.work / "index",
                objects=s.work / "objects",
                alternates=baseline.objects,
            )
            found = None if whole else _along_paths(s, env, patch, base_tree)
            if found is None:
                (s.work / "index").unlink(missing_ok=True)
                s.git(["read-tree", base_tree], env=env)
                s.git([*_APPLY], env=env, stdin=patch)
                found = s.git(["write-tree"], env=env).text()
            return Success(found)
    except (GitError, OSError) as exc:
        return Failure(CaptureError(f"the captured patch does not apply to its base: {why(exc)}"))


def _touched(s: Scratch, env: dict[str, str], patch: bytes) -> list[bytes] | None:
    """The paths the patch names (None: a rename or copy, or a name that is not a plain path
    of the tree or that git's batch input cannot carry)."""
    listed = s.git(["apply", "--numstat", "-z", "--allow-empty"], env=env, stdin=patch)
    paths: list[bytes] = []
    for field in split_z(listed.stdout):
        parts = field.split(b"\t", 2)
        path = parts[-1]
        plain = all(part not in (b"", b".", b"..") for part in path.split(b"/"))
        if len(parts) != 3 or not plain or b"\n" in path:
            return None
        paths.append(path)
    return paths


def _folders(
    s: Scratch, env: dict[str, str], base_tree: str, folders: set[bytes], touched: set[bytes]
) -> dict[bytes, dict[bytes, TreeEntry]] | None:
    """The base's listing of each folder (absent: none there); None where a folder's place
    is held by something else that the patch does not remove."""
    ordered = sorted(folders)
    top = base_tree.encode()
    asked = b"".join(top + (b":" + path if path else b"") + b"\n" for path in ordered)
    out = s.git(["cat-file", "--batch"], env=env, stdin=asked).stdout
    listings: dict[bytes, dict[bytes, TreeEntry]] = {}
    at = 0
    for path in ordered:
        end = out.index(b"\n", at)
        header = out[at:end].split(b" ")
        at = end + 1
        if header[-1] == b"missing":
            continue
        size = int(header[2])
        data, at = out[at : at + size], at + size + 1
        if header[1] == b"tree":
            listings[path] = parse(data, len(base_tree) // 2)
        elif path not in touched:
            return None
    return listings


def _along_paths(s: Scratch, env: dict[str, str], patch: bytes, base_tree: str) -> str | None:
    """The proof with an index of what the patch touches (see the module's docstring); None
    where it must be made the whole way."""
    try:
        named = _touched(s, env, patch)
        if named is None:
            return None
        touched = set(named)
        if not touched:
            return base_tree
        folders = ancestors(touched)
        base = _folders(s, env, base_tree, folders, touched)
        if base is None:
            return None
        lines: list[IndexEntry] = []
        for path in sorted(touched | (folders - {b""})):
            parent, _, name = path.rpartition(b"/")
            entry = base.get(parent, {}).get(name)
            if entry is None:
                continue
            mode, oid = entry
            if mode == TREE and path in touched:
                return None  # a folder in the base where the patch names a file
            if mode != TREE and path not in touched:
                return None  # a file of the base where the patch needs a folder
            if mode != TREE:
                lines.append(new_entry(int(canonical(mode), 8), oid, path))
        index = s.work / "index"
        if lines:
            place(s, index_bytes(lines, len(base_tree)), index, time.time_ns())
        s.git([*_APPLY], env=env, stdin=patch)
        result: dict[bytes, TreeEntry] = {}
        for staged in read_index(load(index), len(base_tree)).entries:
            if staged.stage != 0 or staged.path not in touched:
                return None
            result[staged.path] = (b"%o" % staged.mode, staged.oid)
        return compose(base, touched, result, len(base_tree))
    except (GitError, Unusual, ValueError, IndexError, OSError):
        return None  # made the whole way, which says what git refuses
