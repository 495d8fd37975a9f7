"""A results folder made ready for one grading: private, held by that grading, without an
earlier grade.

Interpreter side (files). `hold` is what `evaluate`, the daemon and `grade_patch` do before
grading (`interpreters.app.setup` turns its refusals into one line and exit 2): the folder is
made private (`private`), held (`holding`), and refused when it holds an earlier grade, unless
forced, which clears it in an order that a kill at any moment cannot turn into a
valid-looking grade. An empty `result.json` made before grading (SSEBench's
runner makes one, and may bind-mount it) is no earlier grade: when it is a plain regular file,
`write_result` writes the grade into it in place.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from collections.abc import Collection
from pathlib import Path

from interpreters.real import files
from interpreters.real.resultsfolder import holding
from interpreters.real.resultsfolder.holding import FolderHeld, Hold
from interpreters.real.resultsfolder.private import FolderRefused, make_private
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "AGENT_PHASE",
    "DAEMON_OWN",
    "DEFAULT_RESULTS",
    "RESULTS_ENTRIES",
    "NotReady",
    "discard_unused",
    "hold",
    "write_result",
]

DEFAULT_RESULTS = Path("/var/lib/ssebench/results")
"""The results folder when none is named; its parent is private too, as in the task
container."""
AGENT_PHASE = "agent-phase"
"""The folder of the results where a daemon keeps the logs of the agent's `test_patch` runs."""
DAEMON_OWN = frozenset({AGENT_PHASE})
"""What a daemon writes in the results folder it shares, its record of the agent's phase
(`interpreters.daemon.sessions`): a grading that joins the folder leaves it, even forced."""
RESULTS_ENTRIES = frozenset(
    {
        "result.json",
        "final.patch",
        "commits.log",
        "source.tar.gz",
        "checks.jsonl",
        "guard.json",
        "logs",
        AGENT_PHASE,
        "summary.json",
    }
)
"""What a grading writes in its results folder; `--force` clears these and nothing else."""


class NotReady(SsegradeError):
    """The results folder cannot be used for this grading: one line saying why."""


def hold(
    results: Path,
    entries: Collection[str],
    *,
    force: bool = False,
    share: bool = False,
    join: bool = False,
    token: str | None = None,
) -> Hold:
    """Make `results` ready and hold it; `entries` are the names a grading writes there.

    The folder is private: mode 0700, made if needed (the parent of `DEFAULT_RESULTS` too);
    refused when it is a link, another user's, or writable by group or others. It is held by
    this grading: refused while another live grading holds it. A folder holding a grade
    (`result.json`), the `checks.jsonl` of a grading that died, or the `.incomplete` mark of
    one cut short is refused unless `force`, which first marks it incomplete and removes
    `result.json` and `summary.json`, then the rest of `entries` (but `DAEMON_OWN` when it
    joined a daemon), and only in a folder that holds nothing else: the logs of two gradings
    never mix, and a kill never leaves an earlier grade looking valid. An empty `result.json`
    alone is no grade: when it is a regular file with no other link, the grade is written into
    it (`write_result`); a link, a FIFO or another kind of file there is refused.

    How it is held: claimed alone; with `share`, claimed then shared (the daemon, beside
    which `evaluate --daemon` grades); with `join`, claimed, or else joined when whoever
    holds it shares it (`evaluate --daemon`); with `token`, only joined beside the batch
    driver that claimed it with that token. `NotReady` (one line) when it cannot be used.
    """
    results = results.absolute()
    try:
        if results == DEFAULT_RESULTS:
            os.close(make_private(results.parent))
        folder = make_private(results)
    except FolderRefused as exc:
        raise NotReady(f"results folder {exc}") from None
    try:
        if token is not None:
            held = holding.join(folder, results, token)
        else:
            held = _claim(folder, results, share=share, join=join)
    except FolderHeld as exc:
        raise NotReady(f"results folder {exc}") from None
    try:
        _ready(held, entries, force=force, prepared=token is not None)
    except BaseException:
        held.release()
        raise
    return held


def _claim(folder: int, results: Path, *, share: bool, join: bool) -> Hold:
    spare = os.dup(folder)
    try:
        held = holding.claim(folder, results, secrets.token_hex(16))
    except FolderHeld:
        if not join:
            os.close(spare)
            raise
        return holding.join(spare, results, None)
    os.close(spare)
    if share:
        held.share()
    return held


def _temp_name(name: str) -> bool:
    return name.startswith(".") and name.endswith(".tmp")


def _ready(held: Hold, entries: Collection[str], *, force: bool, prepared: bool) -> None:
    """Refuse or clear an earlier grade; `prepared`: the holder marked the folder itself."""
    results = held.path
    try:
        names = set(os.listdir(held.folder)) - {holding.LOCK}
    except OSError as exc:
        raise NotReady(f"results folder {results}: {exc.strerror}") from exc
    if prepared:
        names.discard(holding.INCOMPLETE)
    graded = sorted(names & {holding.RESULT, "checks.jsonl", holding.INCOMPLETE})
    if not force and graded == [holding.RESULT]:
        premade = _premade(held)
        if premade is not None:
            held.keep_premade(premade)
            graded = []
    if force:
        strangers = sorted(
            n for n in names if n not in entries and n != holding.INCOMPLETE and not _temp_name(n)
        )
        if strangers:
            raise NotReady(
                f"--force: {results} is not a results folder (it holds {strangers[0]!r}): "
                "not clearing it"
            )
        try:
            # Beside a live daemon, what it recorded of the agent's phase is its own.
            held.clear(keep=() if held.claimed else DAEMON_OWN)
        except OSError as exc:
            raise NotReady(f"--force: cannot clear {results}: {exc.strerror or exc}") from exc
    elif graded:
        raise NotReady(
            f"results folder {results} already holds {graded[-1]}: "
            "choose a new folder, or --force to clear it"
        )
    with contextlib.suppress(FileExistsError):
        os.mkdir("logs", 0o700, dir_fd=held.folder)


def _premade(held: Hold) -> int | None:
    """The folder's `result.json` (an `O_PATH` descriptor) when it is an empty regular file
    with no other link, to be written in place; None when it holds something (an earlier
    grade); `NotReady` when it is a link or another kind of file."""
    where = held.path / holding.RESULT
    flags = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC  # opens a link itself, never a FIFO's peer
    try:
        fd = os.open(holding.RESULT, flags, dir_fd=held.folder)
    except OSError as exc:
        raise NotReady(f"results folder {held.path}: {exc.strerror}") from exc
    try:
        info = os.fstat(fd)
        if stat.S_ISLNK(info.st_mode):
            raise NotReady(
                f"results folder {where}: a link (links are not followed); not written into"
            )
        if not stat.S_ISREG(info.st_mode):
            raise NotReady(f"results folder {where}: not a regular file; not written into")
        if info.st_nlink != 1:
            raise NotReady(
                f"results folder {where}: {info.st_nlink} hard links to it; not written into"
            )
    except BaseException:
        os.close(fd)
        raise
    if info.st_size:
        os.close(fd)
        return None
    return fd


def write_result(results: Path, data: bytes) -> None:
    """Write the grade `data` as `result.json` of the results folder `results` (absolute):
    into the empty `result.json` this process found there when it took the folder, in place
    (`Hold.write_premade`: it may be a bind mount, which no rename replaces), else by an
    atomic rename. `OSError` when it cannot be written."""
    held = holding.held_premade(results)
    if held is None:
        files.atomic_write(results / holding.RESULT, data)
    else:
        held.write_premade(data)


def discard_unused(results: Path) -> None:
    """Remove the results folder `results` (absolute), made for a grading that was then
    refused, when nothing but its lock and an empty `logs/` is in it; anything else (a
    folder someone else wrote into meanwhile) is left as it is."""
    with contextlib.suppress(OSError):
        fd = os.open(results, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            with contextlib.suppress(OSError):
                os.rmdir("logs", dir_fd=fd)  # only when empty
            if set(os.listdir(fd)) <= {holding.LOCK}:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(holding.LOCK, dir_fd=fd)
                os.rmdir(results)
        finally:
            os.close(fd)
