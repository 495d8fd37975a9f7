"""The checks' working trees: copy-on-write views of the patched grading repo where the kernel
allows them, fresh copies otherwise (`FreshCopy`, `ApplyDiff`, `Discard`, and the tree a build
left for `ScanObjects`).

Interpreter layer, under `LocalSystem`. Which one is decided once per grading: a view needs
root, the runner account, `full` containment (the script's own mount namespace, where the view
is mounted) and what `files.views.probe` finds by trying it on the grading repo. The probe runs
in the background from the start of grading, and the patch's layer is made in the background
as soon as the capture gives the patch. Each script's log names what it works in. A view costs
the size of what the patch and the check write, whatever the size of the repo; a copy costs the
repo's size (`WorkAhead` makes it ahead when it can).
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from returns.pipeline import is_successful
from returns.result import Result

from interpreters.real import files, git
from interpreters.real.ahead import WorkAhead
from interpreters.real.files.views import DESCRIPTION, Layers, View, ViewMount
from interpreters.real.files.views import probe as probe_views
from interpreters.real.runner import ContainmentPolicy, ContainmentRefused, Runner, choose
from interpreters.real.runner.account import isolated
from ssegrade import Deadline, TimeLimitReached
from ssegrade.internal.effects import ApplyError, Workspace

__all__ = ["Workspaces"]


@dataclass(slots=True)
class Workspaces:
    """The working trees of one grading, made from the grading repo `repo` in `scratch` for
    `runner`. `views` says whether views may be tried (trees that do not change while grading);
    `next_path` names a new scratch path, `remove` removes a scratch tree (in the background
    when working ahead), `check` raises `TimeLimitReached` once the deadline has passed and
    `until` says when git commands are killed. `close` must be called at the end."""

    repo: Path
    scratch: Path
    runner: Runner
    containment: ContainmentPolicy | None
    views: bool
    next_path: Callable[[str], Path]
    remove: Callable[[Path], None]
    check: Callable[[], None]
    until: Callable[[], Deadline | None]
    ahead: WorkAhead | None = None
    _pool: ThreadPoolExecutor = field(init=False)
    _layers: Future[Layers | str] | None = field(init=False, default=None)
    """The probe's answer while views may be chosen; None once copies are."""
    _probed: Future[Layers | str] | None = field(init=False, default=None)
    _patched: tuple[bytes, Future[Path | None]] | None = field(init=False, default=None)
    _open: dict[str, View] = field(init=False, default_factory=dict)
    _why: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix="views")
        self._why = self._cannot() if self.views else None
        if self.views and self._why is None:
            self._layers = self._probed = self._pool.submit(self._probe)

    # ------------------------------------------------------------ the decision

    def _owner(self) -> tuple[int, int] | None:
        return (self.runner.uid, self.runner.gid) if self.runner.isolated else None

    def _cannot(self) -> str | None:
        """Why no view can be had, as far as is known without trying."""
        if not isolated(self.runner):
            return "scripts do not run as a runner account of their own"
        try:
            mechanisms = choose(self.containment or ContainmentPolicy())
        except ContainmentRefused as exc:
            return str(exc)
        if not mechanisms.namespaces:
            return f"{mechanisms.mode} containment: scripts get no mount namespace of their own"
        return None

    def _probe(self) -> Layers | str:
        return probe_views(self.repo, self.scratch / "layers", (self.runner.uid, self.runner.gid))

    def maybe(self) -> bool:
        """Whether views may still be chosen (no copy need be made ahead before it is known)."""
        return self._layers is not None

    def _answer(self) -> Layers | str:
        """What the probe answered, once it has (it runs first in the pool)."""
        if self._layers is None:
            return self._why or "not tried"
        try:
            return self._layers.result()
        except Exception as exc:  # noqa: BLE001 - the probe failed: copies, and the log says why
            return f"the probe failed: {exc}"

    def _chosen(self) -> Layers | None:
        """The views' layers, once the probe has answered (None: copies, `_why` says why)."""
        if self._layers is None:
            return None
        found = self._answer()
        if isinstance(found, str):
            self._why, self._layers = found, None
            return None
        return found

    def describe(self, workspace: Workspace) -> str:
        """The `workspace:` line of a script's log."""
        if workspace.path in self._open:
            return DESCRIPTION
        why = f" (no copy-on-write view: {self._why})" if self._why else ""
        return f"a fresh copy{why}"

    # ------------------------------------------------------------ the patch's layer

    def patch_known(self, patch: bytes) -> None:
        """Make the patch's layer in the background, if views are (or may be) chosen."""
        if self._layers is not None and patch.strip():
            self._patched = (patch, self._pool.submit(self._layer_of, patch))

    def _layer_of(self, patch: bytes) -> Path | None:
        layers = self._answer()
        if isinstance(layers, str) or not patch.strip():
            return None
        owner = self._owner()

        def apply(point: Path, mount: ViewMount) -> None:
            applied = git.apply_patch(
                point, patch, run_as=owner, until=self.until(), enter=mount.enter
            )
            if not is_successful(applied):
                raise RuntimeError(
                    "the patch applies to the grading repo but not to a view of it: "
                    + applied.failure().log.strip()
                )

        # Named here, not by `next_path`: this runs beside the thread that counts its names.
        point = self.scratch / f"patching-{secrets.token_hex(8)}"
        point.mkdir(mode=0o755)
        return layers.patched(patch, point, apply)

    def _patch_layer(self, patch: bytes) -> Path | None:
        started, self._patched = self._patched, None
        if started is not None and started[0] == patch:
            try:
                return started[1].result(timeout=self._left())
            except TimeoutError:
                self.check()
                raise
        return self._layer_of(patch)

    def _left(self) -> float | None:
        until = self.until()
        return None if until is None else until.left()

    # ------------------------------------------------------------ effects

    def fresh(self, patch: bytes) -> Workspace:
        """A new working tree with `patch` applied (`FreshCopy`)."""
        layers = self._chosen()
        dest = self.next_path("copy")
        if layers is not None:
            try:
                layer = self._patch_layer(patch)
            except (TimeLimitReached, TimeoutError):
                raise
            except Exception as exc:  # noqa: BLE001 - copies then, and the logs say why
                self._why, self._layers = f"the patch's layer could not be made: {exc}", None
            else:
                dest.mkdir(mode=0o755)
                self._open[os.fspath(dest)] = layers.view(dest, layer)
                return Workspace(os.fspath(dest))
        made = None
        if self.ahead is not None:
            made = self.ahead.take(patch, lambda path: self._apply_patch(path, patch))
        if made is None:
            try:
                self.make_copy(dest, patch, self.check)
            except TimeLimitReached:
                self.remove(dest)
                raise
        else:
            os.rename(made, dest)
        if self.ahead is not None:
            self.ahead.prefetch(patch)
        return Workspace(os.fspath(dest))

    def make_copy(self, dest: Path, patch: bytes | None, check: Callable[[], None]) -> None:
        """A fresh copy of the grading repo at `dest`, with `patch` applied in it (if any)."""
        files.fresh_copy(self.repo, dest, self._owner(), check=check)
        check()
        if patch:
            self._apply_patch(dest, patch)
            check()

    def _apply_patch(self, dest: Path, patch: bytes) -> None:
        applied = git.apply_patch(dest, patch, run_as=self._owner(), until=self.until())
        if not is_successful(applied):
            raise RuntimeError(
                "the patch applies to the grading repo but not to a fresh copy of it: "
                + applied.failure().log.strip()
            )

    def mount(self, workspace: Workspace) -> ViewMount | None:
        """The mount a script working in `workspace` needs (None: a copy needs none)."""
        view = self._open.get(workspace.path)
        return None if view is None else view.mounter()

    def apply_diff(self, workspace: Workspace, diff: Path) -> Result[None, ApplyError]:
        """`git apply -p1` of `diff` in `workspace`, as the runner (`ApplyDiff`)."""
        mount = self.mount(workspace)
        return git.apply_diff(
            Path(workspace.path),
            diff,
            run_as=self._owner(),
            until=self.until(),
            enter=None if mount is None else mount.enter,
        )

    def written(self, workspace: Workspace) -> Workspace:
        """Where to find what the checks wrote in `workspace`: a view's own layer (the build's
        outputs, for `ScanObjects`), or the copy itself."""
        view = self._open.get(workspace.path)
        return workspace if view is None else Workspace(os.fspath(view.upper))

    def discard(self, workspace: Workspace) -> None:
        """Remove a working tree (`Discard`)."""
        view = self._open.pop(workspace.path, None)
        if view is None:
            self.remove(Path(workspace.path))
            return
        for path in (view.upper, *view.works, view.target):
            self.remove(path)

    def close(self) -> None:
        """Stop the background work and let the views' user namespace go (their layers go
        with the scratch folder)."""
        self._pool.shutdown(wait=True)
        if self._probed is not None:
            found = self._probed.result() if self._probed.exception() is None else None
            if isinstance(found, Layers):
                found.close()
