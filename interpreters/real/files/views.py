"""Copy-on-write views of the patched grading repo: what each check works in, where the kernel
allows it (`probe`); a fresh copy otherwise.

Interpreter side (files, mounts, processes). A view is an overlayfs mount made in a child's own
mount namespace (a script's, or the `git apply` that writes in it), never in the host's: it
vanishes with that namespace, whatever kills it. Its layers, top first:

- the check's own layer (`upper-N`): everything the check's scripts write, and nothing else;
- the patch's layer (`patch-N`): what `git apply` of the patch wrote, once per grading, in a
  view of the repo alone (absent for an empty patch);
- the grading repo itself, through a private read-only clone of its mount that shows its owner
  as the runner (an idmapped mount): the repo is read, never written, and keeps its owners.

Every layer lives in `root`, a folder only root may enter: the runner works in the view at its
mount point, an empty folder outside `root`, and reaches no layer by any path (overlayfs reads
and writes its layers with the rights of the one who mounted it). What the runner writes is
copied up into the check's layer with the owner it sees, its own. Each mount gets a fresh work
folder and is `volatile` (no sync of the whole file system when it ends).

A view shows the repo as it is, where a copy changes it: a copy belongs wholly to the runner,
drops set-uid and set-gid bits, skips FIFOs, sockets and devices, and holds what is mounted
inside the repo. So the probe takes views only for a repo of one owner (uid and gid), with
none of those, and nothing mounted inside; else fresh copies are made, and the scripts' logs
say why.
"""

from __future__ import annotations

import ctypes
import itertools
import os
import platform
import stat
import subprocess
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from interpreters.real.files.idmap import user_namespace
from interpreters.real.files.mounts import (
    MS_NODEV,
    MS_NOSUID,
    idmap_attr,
    mount,
    move_detached,
    private_namespace,
    unmount_detached,
)
from interpreters.real.files.removal import remove_tree
from interpreters.real.programs import ProgramError, program

__all__ = ["Layers", "View", "ViewMount", "probe"]

_PATH = "/usr/bin:/bin"
_OPTIONS = "redirect_dir=on,index=off,metacopy=off,volatile"
"""Renamed folders are recorded (no EXDEV from a rename), no index or metadata-only copy-up,
and no sync of the upper file system when the view ends: its data is scratch."""
_UNSAFE = set(",:\\\n=")
_KEPT_BITS = 0o7777 & ~(stat.S_ISUID | stat.S_ISGID)
_MACHINES = {"x86_64", "aarch64"}
"""Where the mount system calls' numbers in `mounts` are right."""

DESCRIPTION = (
    "a copy-on-write view of the patched grading repo (overlayfs in the script's own mount "
    "namespace; what it writes goes to a layer of this check's only)"
)
"""The `workspace:` line of a script's log when it works in a view."""


@dataclass(frozen=True, slots=True)
class ViewMount:
    """Everything a child needs to mount one view, prepared beforehand (see `mounts`)."""

    repo: bytes
    point: bytes
    attr: ctypes.Array[ctypes.c_char]
    target: bytes
    options: bytes

    def __call__(self) -> None:
        """Mount the view at its target, in this process's mount namespace (a private one):
        the repo's idmapped clone for an instant at `point`, the overlay, then `point` let go
        (the overlay keeps its own reference to each layer)."""
        move_detached(self.repo, self.attr, self.point)
        mount(b"overlay", self.target, b"overlay", MS_NOSUID | MS_NODEV, self.options)
        unmount_detached(self.point)

    def enter(self) -> None:
        """Enter a private mount namespace, mount the view there and work in it (a `git`
        child's first step, before it becomes the runner)."""
        private_namespace()
        self()
        os.chdir(self.target)


@dataclass(slots=True)
class View:
    """One check's view: its mount point `target`, its own layer `upper`, and the layers below
    (`lowers`, top first)."""

    layers: Layers
    target: Path
    upper: Path
    lowers: tuple[Path, ...]
    works: list[Path] = field(default_factory=list)

    def mounter(self) -> ViewMount:
        """The mount of this view for one child, with a work folder of its own."""
        work = self.layers.fresh("work")
        self.works.append(work)
        return self.layers.mount_of(self.target, self.upper, self.lowers, work)

    def remove(self) -> None:
        """Remove the view's own layer, its work folders and its mount point."""
        for path in (self.upper, *self.works, self.target):
            remove_tree(path)


@dataclass(slots=True)
class Layers:
    """The layers of one grading's views, in `root` (made here, root's, 0700): the grading
    repo `repo`, seen through the user namespace `userns` as the runner's (`runner`: uid,
    gid), and the patch's layer once made. `close` lets the namespace go."""

    repo: Path
    root: Path
    runner: tuple[int, int]
    userns: int
    _attr: ctypes.Array[ctypes.c_char] = field(init=False)
    _count: itertools.count[int] = field(init=False, default_factory=itertools.count)
    _lock: threading.Lock = field(init=False, default_factory=threading.Lock)
    _patches: dict[bytes, Path] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        self._attr = idmap_attr(self.userns)

    def fresh(self, stem: str) -> Path:
        """A new empty folder of ours in `root`."""
        with self._lock:
            number = next(self._count)
        path = self.root / f"{stem}-{number}"
        path.mkdir(mode=0o700)
        return path

    def mount_of(
        self, target: Path, upper: Path, lowers: tuple[Path, ...], work: Path
    ) -> ViewMount:
        """The mount of a view at `target` with these layers."""
        point = self.root / "repo"
        below = ":".join(os.fspath(path) for path in (*lowers, point))
        options = f"lowerdir={below},upperdir={upper},workdir={work},{_OPTIONS}"
        return ViewMount(
            os.fsencode(self.repo), os.fsencode(point), self._attr, os.fsencode(target),
            os.fsencode(options),
        )  # fmt: skip

    def _own_layer(self, stem: str, like: Path) -> Path:
        """A new top layer whose root is the view's top folder: the runner's, with the mode
        and times of `like` (the patch's layer, or the repo)."""
        top = os.stat(like, follow_symlinks=False)
        layer = self.fresh(stem)
        os.chown(layer, *self.runner)
        os.chmod(layer, top.st_mode & _KEPT_BITS)
        os.utime(layer, ns=(top.st_atime_ns, top.st_mtime_ns))
        return layer

    def patched(self, patch: bytes, point: Path, apply: Callable[[Path, ViewMount], None]) -> Path:
        """The layer of `patch` (made once per patch): `apply(point, mount)` applies it in a
        child that mounts, at the empty folder `point`, the view of the repo whose top layer
        it is; `point` is removed after. Raises what `apply` raises (the layer is dropped)."""
        with self._lock:
            found = self._patches.get(patch)
        if found is not None:
            return found
        layer = self._own_layer("patch", self.repo)
        work = self.fresh("work")
        try:
            apply(point, self.mount_of(point, layer, (), work))
        except BaseException:
            remove_tree(layer)
            raise
        finally:
            remove_tree(work)
            remove_tree(point)
        with self._lock:
            return self._patches.setdefault(patch, layer)

    def view(self, target: Path, patch_layer: Path | None) -> View:
        """A new view at the empty folder `target`: a layer of its own over `patch_layer`
        (None: the repo alone)."""
        lowers = () if patch_layer is None else (patch_layer,)
        upper = self._own_layer("upper", patch_layer or self.repo)
        return View(self, target, upper, lowers)

    def close(self) -> None:
        """Let the user namespace go (the layers go with the scratch folder)."""
        if self.userns >= 0:
            os.close(self.userns)
            self.userns = -1


def _refusal(repo: Path, top: os.stat_result) -> str | None:
    """Why a view of `repo` would differ from a fresh copy, or None: entries of another
    owner, set-uid or set-gid files, FIFOs, sockets, devices (one `find`, no link followed)."""
    try:
        find, nice = program("find"), program("nice")
    except ProgramError as exc:
        return str(exc)
    uid, gid = str(top.st_uid), str(top.st_gid)
    odd = [
        "(", "!", "-uid", uid, "-o", "!", "-gid", gid, "-o", "-perm", "/6000",
        "-o", "-type", "p", "-o", "-type", "s", "-o", "-type", "b", "-o", "-type", "c", ")",
    ]  # fmt: skip
    done = subprocess.run(
        # Niced: it runs while the capture does, which comes first.
        [nice, "-n", "19", find, "-P", os.fspath(repo), *odd, "-print", "-quit"],
        capture_output=True,
        env={"PATH": _PATH, "LC_ALL": "C"},
        cwd="/",
        check=False,
    )
    if done.returncode != 0:
        return f"find failed: {done.stderr.decode(errors='replace').strip()[:200]}"
    if done.stdout:
        found = os.fsdecode(done.stdout.rstrip(b"\n"))
        return (
            f"the grading repo holds {found}, of another owner, set-uid or set-gid, or not a "
            "file, folder or link, which a copy changes and a view would not"
        )
    return None


def _mounted_inside(repo: Path) -> str | None:
    """A file system mounted inside `repo` (a view would show the folder beneath it), or
    None."""
    inside = os.fsencode(repo).rstrip(b"/") + b"/"
    try:
        with open("/proc/self/mountinfo", "rb") as listing:
            for line in listing:
                point = line.split(b" ")[4].decode("unicode_escape").encode("latin-1")
                if point.startswith(inside):
                    return f"{os.fsdecode(point)} is mounted inside the grading repo"
    except (OSError, IndexError, UnicodeDecodeError) as exc:
        return f"cannot read the mounts: {exc}"
    return None


def _trial(layers: Layers) -> str | None:
    """Mount a view of the repo alone in a child, write in it, run `/bin/true`; None when it
    worked, else the kernel's reason."""
    try:
        true = program("true")
    except ProgramError as exc:
        return str(exc)
    target = layers.fresh("trial")
    view = layers.view(target, None)
    mounter = view.mounter()
    said, told = os.pipe()  # the child's reason: a preexec_fn that raises loses its stderr

    def enter() -> None:
        step = "a mount namespace of its own"
        try:
            private_namespace()
            step = "the grading repo's idmapped clone"
            move_detached(mounter.repo, mounter.attr, mounter.point)
            step = "the overlay mount"
            mount(b"overlay", mounter.target, b"overlay", MS_NOSUID | MS_NODEV, mounter.options)
            step = "the idmapped clone let go"
            unmount_detached(mounter.point)
            step = "a write in the view"
            os.chdir(mounter.target)
            # A write, a rename and removals: the upper file system takes what a view needs.
            os.close(os.open("probe", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            os.rename("probe", "probed")
            os.unlink("probed")
        except OSError as exc:
            os.write(told, f"{step}: {exc.strerror or exc}".encode(errors="replace"))
            raise

    try:
        done = subprocess.run(
            [true],
            preexec_fn=enter,
            capture_output=True,
            cwd="/",
            env={"PATH": _PATH},
            check=False,
        )
    except subprocess.SubprocessError:
        done = None
    except OSError as exc:
        return f"cannot start a trial: {exc.strerror or exc}"
    finally:
        view.remove()
        os.close(told)
        with os.fdopen(said, "rb") as reason:
            why = reason.read(4096).decode(errors="replace").strip()
    if done is None or done.returncode != 0:
        if not why and done is not None:
            why = done.stderr.decode(errors="replace").strip()
        return _refused(why or "no reason given", layers.repo)
    return None


def _refused(why: str, repo: Path) -> str:
    """The trial's refusal in one line, with what it means when the repo lies on overlayfs
    (every container's root file system), which the kernel will not idmap."""
    if why.startswith("the grading repo's idmapped clone") and _fs_type(repo) == "overlay":
        return (
            f"the grading repo lies on overlayfs, which cannot be idmapped ({why}): put it on "
            "a volume or a tmpfs for views"
        )
    return f"overlayfs refused: {why}"


def _fs_type(path: Path) -> str | None:
    """The type of the file system `path` lies on (its nearest mount point's)."""
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return None
    best, kind = "", None
    here = os.path.realpath(path)
    for line in lines:
        left, _, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if len(fields) < 5 or not tail:
            continue
        point = fields[4].replace("\\040", " ")
        inside = here == point or here.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):
            best, kind = point, tail[0]
    return kind


def probe(repo: Path, root: Path, runner: tuple[int, int]) -> Layers | str:
    """The layers of views of `repo` for the runner `runner`, kept in `root` (made here; must
    not exist), or why a view cannot stand for a fresh copy here. Needs root."""
    if os.geteuid() != 0:
        return "not root"
    if platform.machine() not in _MACHINES:
        return f"no mount system calls known on {platform.machine()}"
    repo = Path(os.path.realpath(repo))
    try:
        top = os.stat(repo, follow_symlinks=False)
    except OSError as exc:
        return f"cannot read the grading repo: {exc.strerror}"
    if any(char in _UNSAFE for char in os.fspath(root)):
        return f"the scratch folder's path {root} has a character overlayfs options cannot hold"
    why = _mounted_inside(repo) or _refusal(repo, top)
    if why is not None:
        return why
    try:
        userns = user_namespace((top.st_uid, top.st_gid), runner)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"no idmapped mount: the kernel refused a user namespace ({exc})"
    root.mkdir(mode=0o700)
    (root / "repo").mkdir(mode=0o700)
    layers = Layers(repo, root, runner, userns)
    failed = _trial(layers)
    if failed is not None:
        layers.close()
        return failed
    return layers
