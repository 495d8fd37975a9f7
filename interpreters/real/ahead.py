"""Work ahead (interpreter layer): what the evaluator does off the critical path.

The evaluator's trees do not change while it grades, so work that no script's outcome decides is
done in the background, as far as the grading program's plan allows (`MayRunAhead`): the next
check's fresh copy (patch applied) while a script runs, the patch check against the grading repo
while the proof runs (the archive of the source tree is `ResultsWriter`'s). Discarded trees are
removed at the end. Copies made ahead and trees on their way out wait in a private folder under
names no one can guess. The order of checks, their results and logs are the same as without
working ahead.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from pathlib import Path

from returns.result import Result

from interpreters.real import files
from ssegrade import TimeLimitReached
from ssegrade.internal.effects import ApplyError
from ssegrade.internal.errors import SsegradeError

__all__ = ["CopyMaker", "WorkAhead"]

CopyMaker = Callable[[Path, "bytes | None", Callable[[], None]], None]
"""Makes a fresh copy at a path, with a patch applied (if any), calling the check between
steps (it raises to stop the copy)."""


class _Stopped(SsegradeError):
    """Background work that is no longer wanted."""


@dataclass(slots=True)
class _Job:
    """A fresh copy being made ahead, and how to stop it."""

    future: Future[None]
    stop: threading.Event
    path: Path
    patch: bytes | None


@dataclass(slots=True)
class WorkAhead:
    """A pool of background work in `private` (made here, mode 0711: the runner may pass
    through, to apply a patch in a copy made ahead, but not list it). `check` raises
    `TimeLimitReached` once the deadline has passed and `left` says the seconds left (None: no
    limit); `note` keeps what went wrong in the log. `close` must be called at the end."""

    private: Path
    make_copy: CopyMaker
    check: Callable[[], None]
    left: Callable[[], float | None]
    note: Callable[[str], None]
    planned: int = 0
    """The fresh copies grading will ask for, as its plan says (`MayRunAhead`): none is made
    ahead beyond, and none at all before the plan names any."""
    _pool: ThreadPoolExecutor = field(init=False)
    _taken: int = field(init=False, default=0)
    _prefetched: _Job | None = field(init=False, default=None)
    _removals: list[Future[None]] = field(init=False, default_factory=list)
    _trash: list[Path] = field(init=False, default_factory=list)
    _checked: tuple[bytes, Future[Result[None, ApplyError]]] | None = field(
        init=False, default=None
    )

    def __post_init__(self) -> None:
        self.private.mkdir(mode=0o711)
        self._pool = ThreadPoolExecutor(4, thread_name_prefix="ahead")

    def remove(self, path: Path) -> None:
        """Move `path` out of the runner's reach at once; it is removed at the end. Removing
        while copies are made would slow both: they compete for the CPU, and on ext4 a file
        created just after many were deleted waits for its inode."""
        away = self.private / f"trash-{secrets.token_hex(16)}"
        try:
            os.rename(path, away)
        except FileNotFoundError:
            return
        self._trash.append(away)

    def checks_over(self) -> None:
        """Stop the copy made ahead, if any: no check will ask for it."""
        self._drop_prefetched()

    # ------------------------------------------------------------ fresh copies

    def prefetch(self, patch: bytes | None) -> None:
        """Start the next fresh copy (with `patch`, if known yet) unless one is on its way or
        grading will ask for no more."""
        if self._prefetched is not None or self._taken >= self.planned:
            return
        path = self.private / f"copy-{secrets.token_hex(16)}"
        stop = threading.Event()

        def check() -> None:
            if stop.is_set():
                raise _Stopped
            self.check()

        future = self._pool.submit(self.make_copy, path, patch, check)
        self._prefetched = _Job(future, stop, path, patch)

    def take(self, patch: bytes, apply: Callable[[Path], None]) -> Path | None:
        """The copy made ahead, with `patch` applied (by `apply` when it was made before the
        patch was known); None when there is none to use. Raises `TimeLimitReached`."""
        self._taken += 1
        job, self._prefetched = self._prefetched, None
        if job is None:
            return None
        if job.patch is not None and job.patch != patch:
            self._drop(job)
            return None
        try:
            job.future.result(timeout=self.left())
        except (FutureTimeout, TimeLimitReached):
            self._drop(job)
            self.check()
            raise
        except Exception:  # noqa: BLE001 - copied again in the foreground, which says why
            self._drop(job)
            return None
        if job.patch is None and patch:
            try:
                apply(job.path)
            except BaseException:
                self.remove(job.path)
                raise
        return job.path

    def _drop_prefetched(self) -> None:
        job, self._prefetched = self._prefetched, None
        if job is not None:
            self._drop(job)

    def _drop(self, job: _Job) -> None:
        job.stop.set()

        def remove() -> None:
            with contextlib.suppress(Exception):
                job.future.result()
            files.remove_tree(job.path)

        self._removals.append(self._pool.submit(remove))

    # ------------------------------------------------------------ the patch check

    def start_check(
        self, patch: bytes, check_patch: Callable[[bytes], Result[None, ApplyError]]
    ) -> None:
        """Check `patch` against the grading repo in the background."""
        self._checked = (patch, self._pool.submit(check_patch, patch))

    def checked(self, patch: bytes) -> Result[None, ApplyError] | None:
        """The background check of `patch`, once done; None when none was started for it."""
        started, self._checked = self._checked, None
        if started is None or started[0] != patch:
            return None
        try:
            return started[1].result(timeout=self.left())
        except FutureTimeout:
            self.check()
            raise

    # ------------------------------------------------------------ the end

    def close(self, remove: bool = True) -> None:
        """Stop and wait for the background work; remove what was discarded (or, without
        `remove`, leave it in the private folder for the caller, who removes the scratch
        folder whole); note removals that failed."""
        self.checks_over()
        trash, self._trash = self._trash, []
        if remove:
            self._removals += [self._pool.submit(files.remove_tree, path) for path in trash]
        self._pool.shutdown(wait=True)
        for removal in self._removals:
            error = removal.exception()
            if error is not None:
                self.note(f"could not remove a scratch tree: {error}")
        self._removals.clear()
