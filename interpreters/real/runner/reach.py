"""What a script reaches in `full` containment (SPEC §5 "Containment"): the plan of its mount
namespace, made before the fork (`plan`), and the mounts that carry it out in the child
(`Mounts`).

Interpreter layer (files, mounts). In the script's mount namespace the host is read-only. Over
it, fresh tmpfs mounts hide what one grading could leave for another or reach of another:
`/tmp`, `/var/tmp` and `/dev/shm` (the script's own, size-limited) and the folder the
gradings' scratch folders are made in (their parent). Then, at their own paths:

- writable: the script's working folder and its HOME;
- the folders of its arguments (its own script, its staged files): writable when they are
  the run's own staged folders (the runner's, among the scratch folders: a PoC module built
  where it lies, as a Rust harness crate or `go build` does), else read-only;
- the task's support folders: a copy-on-write layer of the run's own (what the script
  writes there, where the runner may write, goes when it ends; no other grading sees it);
  the run's own staged folders among them (the runner's, in the grading's own scratch folder,
  as its view of the task folder): writable;
- each folder its environment names (`PATH` entries, `GOPATH`, `CARGO_HOME`, …): read-only, or,
  when the runner can write it on the host (Go's `/go`, cargo's home), a copy-on-write layer
  of the run's own (overlayfs, its upper layer in a root-only folder of the scratch area,
  removed when the run ends). One log line per folder says which. A folder that is, or
  holds, the gradings' scratch folders is not given at all, whatever names it (`TMP`, `TEMP`).

Every mount is made from a tree cloned before the host turns read-only, so what is given
writable keeps the host's mount options, and nothing of the host stays writable.
"""

from __future__ import annotations

import ctypes
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from interpreters.real.files.mounts import (
    MS_NODEV,
    MS_NOSUID,
    attach,
    clone_tree,
    mount,
    read_only_attr,
    set_attr,
)
from interpreters.real.runner.guardian import scratch_owner

__all__ = ["PRIVATE", "Mounts", "Place", "Reach", "plan"]

PRIVATE = ("/tmp", "/var/tmp", "/dev/shm")
"""The host's world-writable folders: each script gets fresh ones."""

_HIDING = b"mode=0755,size=4m,nr_inodes=16384"
"""The tmpfs over the scratch folders' parent: it holds only the mount points."""
_UNSAFE = set(",:\\\n=")
"""Characters overlayfs options cannot hold."""
_OVERLAY = "redirect_dir=on,index=off,metacopy=off,volatile"

Kind = Literal["writable", "read-only", "copy-on-write"]


@dataclass(frozen=True, slots=True)
class Place:
    """A folder given to the script at its own path: `kind`, and for a copy-on-write one its
    overlay's mount options."""

    path: str
    kind: Kind
    options: str = ""


@dataclass(slots=True)
class Reach:
    """The plan of a script's mount namespace: the tmpfs mounts that hide (`hidden`: path →
    mount options), the folders given back (`places`, outer first), the log lines."""

    hidden: dict[str, bytes]
    places: list[Place] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    def mounts(self) -> Mounts:
        """The mounts of this plan, prepared for a child (see `Mounts`)."""
        roots = tuple(self.hidden)
        trees = [
            _Tree(
                os.fsencode(p.path),
                p.kind == "read-only",
                _under(p.path, roots),
                p.options.encode(),
            )
            for p in self.places
        ]
        hidden = [(os.fsencode(path), options) for path, options in self.hidden.items()]
        return Mounts(trees, hidden, read_only_attr())


@dataclass(frozen=True, slots=True)
class _Tree:
    """A place, prepared: its path, whether read-only, whether in a hiding tmpfs, and for a
    copy-on-write one its overlay's options."""

    target: bytes
    rdonly: bool
    inside: bool
    overlay: bytes


@dataclass(frozen=True, slots=True)
class Mounts:
    """Everything a child needs to make its mount namespace as planned, prepared beforehand:
    only system calls (and `makedirs` in its own tmpfs) run in the child."""

    trees: list[_Tree]
    hidden: list[tuple[bytes, bytes]]
    rdonly: ctypes.Array[ctypes.c_char]

    def __call__(self) -> None:
        """Make the namespace (a private mount namespace of this process's own): raises
        `OSError` whose message names the step. A copy-on-write layer overlayfs refuses
        leaves its folder read-only, and a line on stderr says so."""
        step, held = "", []
        try:
            for tree in self.trees:
                step = f"a clone of {os.fsdecode(tree.target)}"
                rdonly = tree.rdonly or (bool(tree.overlay) and not _overlay(tree))
                held.append(clone_tree(tree.target))
                if rdonly:
                    set_attr(held[-1], self.rdonly)
            step = "the host read-only"
            set_attr(b"/", self.rdonly)
            for target, options in self.hidden:
                step = f"a tmpfs over {os.fsdecode(target)}"
                mount(b"tmpfs", target, b"tmpfs", MS_NOSUID | MS_NODEV, options)
            for fd, tree in zip(held, self.trees, strict=True):
                step = f"{os.fsdecode(tree.target)} given back"
                if tree.inside:
                    os.makedirs(tree.target, 0o755, exist_ok=True)
                attach(fd, tree.target)
        except OSError as exc:
            raise OSError(exc.errno, f"{step}: {exc.strerror or exc}") from None
        finally:
            for fd in held:
                os.close(fd)


def _overlay(tree: _Tree) -> bool:
    """Mount the copy-on-write layer of `tree` at its path; False (said on stderr) when
    overlayfs refuses it."""
    try:
        mount(b"overlay", tree.target, b"overlay", MS_NOSUID | MS_NODEV, tree.overlay)
    except OSError as exc:
        said = (
            f"ssegrade: {os.fsdecode(tree.target)} is read-only: overlayfs refused a "
            f"copy-on-write layer over it: {exc.strerror or exc}\n"
        )
        os.write(2, said.encode(errors="replace"))
        return False
    return True


def plan(
    *,
    writable: Iterable[Path],
    readable: Iterable[Path],
    toolchain: Mapping[str, Sequence[str]],
    shared: Iterable[Path] = (),
    parent: str,
    tmp_options: bytes,
    runner: tuple[int, int],
    layers: Callable[[], Path],
) -> Reach:
    """The plan for a script given the folders `writable`, `readable`, the folders its
    environment names (`toolchain`: folder → the variables naming it) and the support folders
    (`shared`), when the gradings' scratch folders are made in `parent`; `tmp_options` are
    those of its private `/tmp`.
    Copy-on-write layers are made in the folder `layers()` gives (a root-only folder, asked
    for when one is needed: the caller removes it)."""
    tmps = [path for path in PRIVATE if os.path.isdir(path)]
    parent = os.path.realpath(parent)
    scratch = [] if parent == "/" else [parent]
    roots = [*tmps, *(p for p in scratch if not _under(p, tmps))]
    guarded = [*roots, *scratch]
    reach = Reach({path: tmp_options if path in tmps else _HIDING for path in sorted(roots)})
    given: list[str] = []
    for path in _resolved(writable):
        if _holds(path, guarded):
            reach.lines.append(
                f"warning: {path} is not given to the script: it holds /tmp, /var/tmp, "
                f"/dev/shm or the folder of the gradings' scratch, {parent}"
            )
        elif not _under(path, given):
            given.append(path)
    own = {_scratch_of(path, scratch) for path in given} - {None}
    for path in _resolved(shared):  # the run's own staged folders (a view of the task folder)
        mine = _scratch_of(path, scratch) in own and _owned_by(path, runner[0])
        if mine and not _under(path, given):
            given.append(path)
    places = [Place(path, "writable") for path in given]
    named = [
        (path, f"folder named by {' '.join(sorted(names))}") for path, names in toolchain.items()
    ]
    named += [(os.fspath(path), "support folder") for path in shared if os.path.isdir(path)]
    for path, label in sorted(named, key=lambda item: (os.path.realpath(item[0]), item[1])):
        always = label == "support folder"  # outer first: the last place it lies in is nearest
        real = os.path.realpath(path)
        kind, what = _toolchain(real, given, roots, scratch, runner if not always else None, layers)
        reach.lines.append(f"{label}: {path}: {what}")
        if kind is None:
            continue
        covered = [p for p in places if p.kind != "writable" and _under(real, (p.path,))]
        if (kind == "read-only" and not _under(real, roots)) or _covers(covered, kind):
            continue
        places.append(_layer(real, layers) if kind == "copy-on-write" else Place(real, kind))
    for path in _resolved(readable):
        seen = any(_under(path, (p.path,)) for p in places)
        if not seen and _under(path, roots) and not _holds(path, guarded):
            staged = _under(path, scratch) and _owned_by(path, runner[0])
            places.append(Place(path, "writable" if staged else "read-only"))
    reach.places = sorted(places, key=lambda place: place.path.count("/"))
    return reach


def _owned_by(path: str, uid: int) -> bool:
    """Whether `path` is a folder (not a link) owned by `uid`."""
    try:
        return os.lstat(path).st_uid == uid
    except OSError:
        return False


def _toolchain(
    path: str,
    given: list[str],
    roots: list[str],
    scratch: list[str],
    runner: tuple[int, int] | None,
    layers: Callable[[], Path],
) -> tuple[Kind | None, str]:
    """What a folder the environment names (or a support folder) becomes, and the log's words
    for it (`scratch`: the folder of the gradings' scratch folders, if any is hidden; `runner`
    None: a layer whoever may write it)."""
    if _under(path, given):
        return None, "the grading's own (writable)"
    if path in PRIVATE:
        return None, "the script's private one"
    if _holds(path, scratch) and _under(path, roots):
        return None, "not given (it is or holds the folder of the gradings' scratch folders)"
    if _in_scratch(path, scratch):
        return None, "not given (it lies in a grading's scratch folder)"
    if _holds(path, [*roots, *scratch]):
        return "read-only", "read-only (what it holds of /tmp and the scratch folders hidden)"
    if runner is not None and not _runner_writes(path, runner):
        return "read-only", "read-only"
    if _UNSAFE & set(path + os.fspath(layers())):
        return "read-only", "read-only (its path or the scratch folder's has a character "
        "overlayfs options cannot hold)"
    why = "" if runner is None else "the runner can write it; "
    return "copy-on-write", (
        f"a copy-on-write layer of this run's own ({why}what the run writes there goes when "
        "it ends)"
    )


def _covers(covered: list[Place], kind: Kind) -> bool:
    """Whether a place below those `covered` (places it lies in) needs no mount of its own:
    a copy-on-write folder keeps the host's rights, so only a copy-on-write place inside a
    read-only one does."""
    return bool(covered) and not (kind == "copy-on-write" and covered[-1].kind == "read-only")


def _layer(path: str, layers: Callable[[], Path]) -> Place:
    """A copy-on-write place over `path`: its upper layer (with the folder's owner and mode)
    and work folder made in the folder `layers()` gives."""
    top = os.stat(path)
    own = Path(tempfile.mkdtemp(dir=layers()))
    upper, work = own / "upper", own / "work"
    upper.mkdir(mode=0o700)
    work.mkdir(mode=0o700)
    os.chown(upper, top.st_uid, top.st_gid)
    os.chmod(upper, top.st_mode & 0o7777)
    options = f"lowerdir={path},upperdir={upper},workdir={work},{_OVERLAY}"
    return Place(path, "copy-on-write", options)


def _runner_writes(path: str, runner: tuple[int, int]) -> bool:
    """Whether the runner (uid, gid, no other group) may create files in `path` by its mode
    (root's own folders: never said so; root scripts get read-only)."""
    uid, gid = runner
    try:
        info = os.stat(path)
    except OSError:
        return False
    if uid == 0:
        return False
    if info.st_uid == uid:
        return bool(info.st_mode & 0o200)
    if info.st_gid == gid:
        return bool(info.st_mode & 0o020)
    return bool(info.st_mode & 0o002)


def _in_scratch(path: str, parents: list[str]) -> bool:
    """Whether `path` lies in a scratch folder (`ssegrade-[<kind>-]<tag>-<random>`) of one of
    `parents`."""
    return _scratch_of(path, parents) is not None


def _scratch_of(path: str, parents: list[str]) -> str | None:
    """The scratch folder of one of `parents` that `path` lies in (or is), if any."""
    for parent in parents:
        if _under(path, (parent,)) and path != parent:
            first = path[len(parent.rstrip("/")) + 1 :].split("/", 1)[0]
            if scratch_owner(first) is not None:
                return os.path.join(parent, first)
    return None


def _resolved(folders: Iterable[Path]) -> list[str]:
    """The folders that exist, resolved, sorted, without repeats."""
    return sorted({os.path.realpath(f) for f in folders if os.path.isdir(f)})


def _under(path: str, roots: Iterable[str]) -> bool:
    """Whether `path` is one of `roots` or lies inside one."""
    return any(path == root or path.startswith(root.rstrip("/") + "/") for root in roots)


def _holds(path: str, roots: Iterable[str]) -> bool:
    """Whether one of `roots` is `path` or lies inside it."""
    return any(_under(root, (path,)) for root in roots)
