"""Selection: which runs count, folded one run at a time (SPEC §11).

Pure core. `Selector.add` takes run records as they are read and keeps only what the report
needs: under `--runs latest` the newest run of each (task, model, agent) and two counters, so
memory grows with the number of groups, not of runs; under `--runs all` every run, as trials.

The rules:

- the order of the runs of one (task, model, agent) is (`started_at`, run id), a missing time
  counting as the oldest and run ids compared naturally (`run-9` before `run-10`);
- `latest` picks the newest run among **all** the runs of a group first; when that run is a
  reference run or an `error` run, the group has no run in the shares and that run is listed
  as excluded (older runs are set aside, never promoted);
- `all` keeps every graded run and lists every reference and `error` run as excluded;
- with `errors_as_failures`, an `error` run is graded, as failed;
- under SSEBench's rules (`ssegrade.report._rules`), run ids are compared as text, and an
  `error` run is one whose grade says so;
- graded runs of a group are numbered as trials 1, 2, … from the oldest, so a run has the same
  trial number in both modes;
- which checks a task has comes from its config when any run carries it, else from the check
  fields any run of that task filled in (reference and set-aside runs included).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from ssegrade.internal.checks import grading_order
from ssegrade.internal.task import Check
from ssegrade.report._model import RunsMode
from ssegrade.report._rules import Rules, is_error, ssebench_order
from ssegrade.report._summary import RunRecord

__all__ = ["Selection", "Selector", "natural_key", "newer", "run_order"]

GroupKey = tuple[str, str, str]
"""(task, model, agent)."""

_DIGITS = re.compile(r"(\d+)")
_NEVER = datetime.min.replace(tzinfo=UTC)


def natural_key(text: str) -> tuple[tuple[str | int, ...], str]:
    """A sort key that orders the digit runs of `text` as numbers.

    >>> sorted(["run-10", "run-9", "run-1"], key=natural_key)
    ['run-1', 'run-9', 'run-10']
    >>> sorted(["r01", "r1", "r0"], key=natural_key)
    ['r0', 'r01', 'r1']
    """
    pieces = _DIGITS.split(text)
    # Even positions are text, odd ones digits: tuples compare position by position.
    return (tuple(int(p) if i % 2 else p for i, p in enumerate(pieces)), text)


def _aware(when: datetime) -> datetime:
    return when.replace(tzinfo=UTC) if when.tzinfo is None else when


def run_order(rec: RunRecord) -> tuple[bool, datetime, tuple[tuple[str | int, ...], str]]:
    """The order of the runs of one group: (`started_at`, run id), no time = the oldest; a
    time without a zone is UTC."""
    when = rec.started_at
    if when is None:
        return (False, _NEVER, natural_key(rec.run_id))
    return (True, _aware(when), natural_key(rec.run_id))


def _start(rec: RunRecord) -> datetime:
    assert rec.started_at is not None
    return _aware(rec.started_at)


def newer(rec: RunRecord, than: RunRecord) -> bool:
    """Whether `rec` comes after `than` in `run_order` (cheaper: run ids are compared only
    when the times do not decide).

    >>> from ssegrade.internal.result import PatchResult
    >>> passed = PatchResult(status="passed")
    >>> newer(RunRecord("t", "m", "a", "run-10", passed), RunRecord("t", "m", "a", "run-9", passed))
    True
    """
    a, b = rec.started_at, than.started_at
    if (a is None) != (b is None):
        return a is not None
    if a is not None and b is not None:
        a, b = _aware(a), _aware(b)
        if a != b:
            return a > b
    return natural_key(rec.run_id) > natural_key(than.run_id)


@dataclass(slots=True)
class _Latest:
    best: RunRecord
    graded: int


@dataclass(frozen=True, slots=True)
class Selection:
    """What the selection kept: (trial, record) of each kept run, the excluded runs, the checks
    of each task, how many runs `latest` set aside, and the options it was made with."""

    runs: RunsMode
    kept: tuple[tuple[int, RunRecord], ...]
    excluded: tuple[RunRecord, ...]
    checks: dict[str, frozenset[Check]]
    set_aside: int
    errors_as_failures: bool
    rules: Rules = "ssegrade"


class Selector:
    """The streaming selection: `add` every run once (a run is a folder), then `result`.

    >>> from ssegrade.internal.result import PatchResult
    >>> s = Selector("latest")
    >>> for rid, status in [("run-9", "passed"), ("run-10", "error")]:
    ...     s.add(RunRecord("t", "m", "a", rid, PatchResult(status=status)))
    >>> sel = s.result()
    >>> sel.kept, [r.run_id for r in sel.excluded], sel.set_aside
    ((), ['run-10'], 1)
    """

    __slots__ = (
        "_all",
        "_configured",
        "_errors",
        "_excluded",
        "_groups",
        "_observed",
        "_rules",
        "_seen",
    )

    def __init__(
        self, runs: RunsMode = "latest", errors_as_failures: bool = False, rules: Rules = "ssegrade"
    ) -> None:
        self._all = runs == "all"
        self._errors = errors_as_failures
        self._rules: Rules = rules
        self._groups: dict[GroupKey, _Latest | list[RunRecord]] = {}
        self._excluded: list[RunRecord] = []
        self._configured: dict[str, frozenset[Check]] = {}
        self._observed: dict[str, set[Check]] = {}
        self._seen = 0

    def graded(self, rec: RunRecord) -> bool:
        """Whether the run takes part in the shares: not a reference run, and not an `error`
        run unless errors count as failures."""
        return not rec.reference and (self._errors or not is_error(rec, self._rules))

    def _newer(self, rec: RunRecord, than: RunRecord) -> bool:
        if self._rules == "ssebench":
            return ssebench_order(rec) > ssebench_order(than)
        return newer(rec, than)

    def add(self, rec: RunRecord) -> None:
        """Fold one run in."""
        self._seen += 1
        self._note_checks(rec)
        key = (rec.task, rec.model, rec.agent)
        graded = self.graded(rec)
        if self._all:
            if not graded:
                self._excluded.append(rec)
                return
            trials = self._groups.setdefault(key, [])
            assert isinstance(trials, list)
            trials.append(rec)
            return
        latest = self._groups.get(key)
        if latest is None:
            self._groups[key] = _Latest(rec, int(graded))
            return
        assert isinstance(latest, _Latest)
        latest.graded += graded
        if self._newer(rec, latest.best):
            latest.best = rec

    def _note_checks(self, rec: RunRecord) -> None:
        task = rec.task
        seen = self._observed.get(task)
        if seen is None:
            seen = self._observed[task] = set()
        if rec.checks is not None:
            known = self._configured.get(task)
            self._configured[task] = rec.checks if known is None else known | rec.checks
        if task in self._configured:
            return  # its config decides: what runs show is not needed
        for check in grading_order():  # its last field is null when it did not run
            if getattr(rec.patch, check.fields[-1]) is not None:
                seen.add(check.name)

    def _order(self, group: list[RunRecord]) -> Callable[[RunRecord], Any]:
        """The sort key of a group's runs: `run_order` (SSEBench's: `ssebench_order`), or
        the start time alone when every run has one and no two are the same (the run ids
        would decide nothing, and making their keys is most of the cost)."""
        if self._rules == "ssebench":
            return ssebench_order
        times = {None if r.started_at is None else _aware(r.started_at) for r in group}
        if None in times or len(times) < len(group):
            return run_order
        return _start

    def result(self) -> Selection:
        """The selection of every run added so far."""
        kept: list[tuple[int, RunRecord]] = []
        excluded = list(self._excluded)
        for group in self._groups.values():
            if isinstance(group, list):
                if len(group) > 1:
                    group.sort(key=self._order(group))
                kept.extend(enumerate(group, start=1))
            elif self.graded(group.best):
                kept.append((group.graded, group.best))
            else:
                excluded.append(group.best)
        checks = {
            task: self._configured.get(task, frozenset(seen))
            for task, seen in self._observed.items()
        }
        return Selection(
            runs="all" if self._all else "latest",
            kept=tuple(kept),
            excluded=tuple(excluded),
            checks=checks,
            set_aside=self._seen - len(kept) - len(excluded),
            errors_as_failures=self._errors,
            rules=self._rules,
        )
