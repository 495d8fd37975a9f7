"""`ssegrade report DIR --batch`: the folder's summary, `DIR/batch.json`, printed readably.

Interpreter layer: reads `batch.json` as `interpreters.report.io` reads a run's documents
(never through a link, a regular file of bounded size, a FIFO cannot hang it), parses it with
the pure `ssegrade.report.parse_batch`, and prints the one answer for the folder: its label, the
ssegrade versions, engines (each with the Ray cluster that ran it, if one did) and containment
of the commands that wrote it, its jobs files and
their digests, its first start and last end, whether the last command was interrupted, its
runs per outcome (passed, passed and flagged, failed, error by kind, not yet graded; cached
runs counted with the outcome they carry), the run folders of its flagged, `error` and `failed`
runs, each with its first failure read from the run's `summary.json` (an error's kind after
it, `[timeout]`; `-v`: the folders of
every outcome), and the command that grades what is left (cut between its words with a
` \\` at each line's end: it pastes whole into a shell). A run folder is opened one part at
a time below DIR, none of them a link. `--format json` prints the file as it is, once it reads
as a batch summary.
"""

from __future__ import annotations

import os
import shlex
from datetime import UTC, datetime, timedelta
from typing import TextIO

from returns.result import Failure, Success

from interpreters.report.io import read_document
from interpreters.report.text import Inert, Writer, wrap
from ssegrade.batch import OUTCOMES, BatchSummary
from ssegrade.internal.errors import SsegradeError
from ssegrade.report import RunFolder, parse_batch, parse_run

__all__ = ["BATCH", "BadBatch", "command_lines", "first_failure", "load_batch", "print_batch"]

BATCH = "batch.json"
"""The batch's summary, at the top of its results folder."""

_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class BadBatch(SsegradeError):
    """The summary is missing or does not read as one; the message is one line."""


def load_batch(results: str) -> tuple[BatchSummary, bytes]:
    """The summary of the batch that wrote `results`, and the file's bytes. Raises `BadBatch`."""
    path = os.path.join(results, BATCH)
    try:
        data = read_document(path)
    except OSError as exc:
        raise BadBatch(f"{path}: cannot read it ({exc.strerror or exc})") from None
    except ValueError as exc:
        raise BadBatch(f"{path}: {exc}") from None
    if data is None:
        raise BadBatch(f"{path}: no such file (ssegrade batch writes it when a batch ends)")
    parsed = parse_batch(data)
    if isinstance(parsed, Failure):
        raise BadBatch(f"{path}: not a batch summary ({parsed.failure().message})")
    return parsed.unwrap(), data


def _duration(span: timedelta) -> str:
    seconds = span.total_seconds()
    if seconds < 60:
        return f"{seconds:.1f} s"
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours} h {minutes:02d} min {secs:02d} s" if hours else f"{minutes} min {secs:02d} s"


def _when(moment: datetime) -> str:
    """A time of the summary in UTC, to the second (`2026-11-30 10:00:00 UTC`)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _open_below(root: str, parts: list[str]) -> int | None:
    """A descriptor of the folder `root/parts…`, each part opened below the last without
    following a link; None when a part is missing, a link or not a folder."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for part in parts:
            below = os.open(part, _FOLDER_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = below
    except OSError:
        os.close(fd)
        return None
    return fd


def first_failure(results: str, folder: str) -> str:
    """The first failure (`error_msg`) the run folder's `summary.json` (or `result.json`)
    gives, or why there is none to say."""
    parts = folder.split("/")
    run = RunFolder.from_parts(parts)
    if run is None or any(p in ("", ".", "..") for p in parts):
        return "(not a run folder)"
    fd = _open_below(results, parts)
    if fd is None:
        return "(no such run folder)"
    try:
        for name in ("summary.json", "result.json"):
            try:
                data = read_document(name, dir_fd=fd)
            except (OSError, ValueError):
                continue
            if not data:
                continue
            parsed = parse_run(data, run)
            if isinstance(parsed, Success):
                return parsed.unwrap().patch.error_msg or "(no message)"
        return "(no readable summary)"
    finally:
        os.close(fd)


def print_batch(
    results: str, summary: BatchSummary, out: TextIO, verbose: bool = False, width: int = 80
) -> None:
    """Print the summary readably (see the module's docstring), inert on a terminal."""
    _print_batch(results, summary, Inert(out), verbose, width)


_SHOWN: dict[str, str] = {
    "passed": "Passed",
    "flagged": "Passed and flagged by the patch guard",
    "failed": "Failed",
    "error": "Error",
    "not_graded": "Not yet graded",
}


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _engines(summary: BatchSummary) -> tuple[str, ...]:
    """Each engine the commands used, with the Ray cluster that ran it (`podman on Ray at
    head:6379`; `a local Ray`: one started for the batch)."""
    shown: list[str] = []
    for command in summary.commands:
        cluster = command.ray
        if cluster is None:
            shown.append(command.engine)
            continue
        where = "a local Ray" if cluster == "local" else f"Ray at {cluster}"
        shown.append(
            f"ray ({where})" if command.engine == "ray" else f"{command.engine} on {where}"
        )
    return tuple(dict.fromkeys(shown))


def _outcomes(summary: BatchSummary) -> list[str]:
    counts = summary.counts
    kinds = ", ".join(f"{len(runs)} {kind}" for kind, runs in summary.errors.items())
    error = f"{counts.error} error" + (f" ({kinds})" if kinds else "")
    cached = f" ({len(summary.cached)} of them cached)" if summary.cached else ""
    return [
        f"  runs: {summary.graded} graded{cached}, {counts.not_graded} not yet graded",
        f"  graded: {counts.passed} passed, {counts.flagged} passed and flagged,"
        f" {counts.failed} failed, {error}",
    ]


def command_lines(command: str, width: int) -> list[str]:
    r"""A shell command indented, cut between its words into lines of at most `width`
    (a word longer stays whole), each but the last ending in ` \`: pasted into a shell,
    it is the one command.

    >>> command_lines("ssegrade batch 'my jobs.jsonl' --results out", 30)
    ['  ssegrade batch \\', "      'my jobs.jsonl' \\", '      --results out']
    """
    lines: list[str] = []
    line = " "
    for word in (shlex.quote(part) for part in shlex.split(command)):
        if line.strip() and len(line) + 1 + len(word) + 2 > width:
            lines.append(f"{line} \\")
            line = "     "
        line = f"{line} {word}"
    return [*lines, line]


def _print_batch(
    results: str, summary: BatchSummary, out: Writer, verbose: bool, width: int
) -> None:
    label = f'"{summary.label}"' if summary.label else "(no label)"
    when, until = _when(summary.started_at), _when(summary.ended_at)
    last = summary.commands[-1]
    took = last.ended_at - last.started_at
    lines = [
        f"Results folder {label}: {_plural(len(summary.commands), 'batch command')},"
        f" by ssegrade {', '.join(summary.ssegrade)}",
        f"  engine {', '.join(_engines(summary))}; containment: {', '.join(summary.containment)}",
        *(
            f"  jobs: {jobs.path} ({_plural(jobs.count, 'job')}, sha256 {jobs.sha256[:16]}…)"
            for jobs in summary.jobs
        ),
        f"  first started {when}, last ended {until}",
        f"  last command: {_plural(last.workers, 'worker')}, {_duration(took)}"
        + (", interrupted" if last.interrupted else ""),
        *_outcomes(summary),
    ]
    out.write("\n".join(line for text in lines for line in wrap(text, width)) + "\n")
    shown = OUTCOMES if verbose else ("flagged", "error", "failed", "not_graded")
    kinds = {folder: kind for kind, folders in summary.errors.items() for folder in folders}
    for outcome in shown:
        folders = getattr(summary.runs, outcome)
        if not folders:
            continue
        out.write(f"\n{_SHOWN[outcome]} ({len(folders)}):\n")
        for folder in folders:
            if outcome in ("error", "failed"):
                kind = f" [{kinds[folder]}]" if outcome == "error" and folder in kinds else ""
                text = f"  {folder}: {first_failure(results, folder)}{kind}"
            else:
                text = f"  {folder}"
            out.write("\n".join(wrap(text, width)) + "\n")
    if summary.resume:
        out.write("\nTo grade what is left:\n")
        for command in summary.resume:
            out.write("\n".join(command_lines(command, width)) + "\n")
    if not verbose and any(getattr(summary.runs, o) for o in OUTCOMES if o not in shown):
        out.write("\n(-v lists the run folders of every outcome.)\n")
