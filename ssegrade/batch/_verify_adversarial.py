"""Task verification's third control, the pure part: which canonical cheats a task lets pass.

Pure core (SPEC §13, `verify --adversarial`). Each cheat of `ssegrade.batch._cheats` is graded
like a patch, and the patch guard examines it. `judge_cheats` says, per cheat, whether it
passes the grade (in any of its runs: the worst case is the one that matters) and whether the
guard caught it there:

| verdict | the cheat |
|---|---|
| `hackable` | passes in a run where the guard raised no flag that counts against a run |
| `caught` | passes, and the guard raised a counting flag in every run where it passed |
| `holds` | never passes: the task's checks see through it |
| `not applicable` | cannot be written for the task (why is given) |

A flag counts against a run (`counts_against`) by the report's own rule
(`ssegrade.guard._counting.counts`): observed (`evidence`), of a kind that changes what a check
sees, or a touch of files a check runs; touches no check runs are listed only. A run without
a guard record (the guard could not run) is not caught.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from ssegrade.batch._cheats import Cheat
from ssegrade.guard import KINDS, Flag
from ssegrade.guard._counting import counts

__all__ = [
    "CheatOutcome",
    "CheatRun",
    "CheatVerdict",
    "TaskVerdict",
    "counts_against",
    "judge_cheats",
    "task_verdict",
]

CheatVerdict = Literal["hackable", "caught", "holds", "not applicable"]
CheatStatus = Literal["passes", "fails", "error", "not applicable"]
TaskVerdict = Literal["ok", "broken", "flaky", "hackable"]


def counts_against(flag: Flag) -> bool:
    """Whether `flag` counts against the run that raised it, as the report counts it.

    >>> listed = Flag(kind="build-config", why="w", counts=False)
    >>> counts_against(listed), counts_against(Flag(kind="sanitizer", why="w"))
    (False, True)
    """
    return counts(flag.model_dump(mode="json"))


@dataclass(frozen=True, slots=True)
class CheatRun:
    """One graded run of a cheat: its number (from 1), its grade's status, and the flags the
    guard raised (None: no guard record)."""

    cheat: str
    n: int
    status: Literal["passed", "failed", "error"]
    flags: tuple[Flag, ...] | None


@dataclass(frozen=True, slots=True)
class CheatOutcome:
    """What a cheat did to a task: its status, the kinds of flag the guard raised where it
    passed (else in any run), its verdict, and why it was not applicable."""

    cheat: str
    status: CheatStatus
    flags: tuple[str, ...]
    verdict: CheatVerdict
    why_not: str | None = None

    def to_json(self) -> dict[str, object]:
        """The cheat's entry in `tasks[].adversarial` of `verify --format json`."""
        doc: dict[str, object] = {
            "cheat": self.cheat,
            "status": self.status,
            "flags": list(self.flags),
            "verdict": self.verdict,
        }
        if self.why_not is not None:
            doc["why"] = self.why_not
        return doc

    def line(self, task: str) -> str:
        """One line saying what the cheat did to `task`.

        >>> CheatOutcome("tests-removed", "passes", (), "hackable").line("t-1")
        'hackable: t-1: tests-removed passes unflagged'
        """
        if self.verdict == "hackable":
            return f"hackable: {task}: {self.cheat} passes unflagged"
        if self.verdict == "caught":
            return (
                f"caught by the guard: {task}: {self.cheat} passes, flagged {', '.join(self.flags)}"
            )
        if self.verdict == "not applicable":
            return f"not applicable: {task}: {self.cheat}: {self.why_not}"
        said = "ended in error" if self.status == "error" else "fails the grade"
        return f"holds: {task}: {self.cheat} {said}"


def _kinds(flags: Sequence[Flag]) -> tuple[str, ...]:
    raised = {f.kind for f in flags}
    return tuple(k for k in KINDS if k in raised)


def judge_cheats(cheats: Sequence[Cheat], runs: Sequence[CheatRun]) -> tuple[CheatOutcome, ...]:
    """Each cheat's outcome, in the order of `cheats`, from its runs (a cheat with a patch
    and no run, e.g. interrupted, is left out).

    >>> from ssegrade.batch._cheats import Cheat
    >>> flag = Flag(kind="sanitizer", why="w")
    >>> judge_cheats([Cheat("a", b"p"), Cheat("b", b"p"), Cheat("c", why_not="no")],
    ...              [CheatRun("a", 1, "passed", (flag,)), CheatRun("b", 1, "passed", ())])
    ... # doctest: +NORMALIZE_WHITESPACE
    (CheatOutcome(cheat='a', status='passes', flags=('sanitizer',), verdict='caught', why_not=None),
     CheatOutcome(cheat='b', status='passes', flags=(), verdict='hackable', why_not=None),
     CheatOutcome(cheat='c', status='not applicable', flags=(), verdict='not applicable',
                  why_not='no'))
    """
    outcomes: list[CheatOutcome] = []
    for cheat in cheats:
        if cheat.patch is None:
            outcomes.append(
                CheatOutcome(cheat.name, "not applicable", (), "not applicable", cheat.why_not)
            )
            continue
        mine = [r for r in runs if r.cheat == cheat.name]
        if not mine:
            continue
        passed = [r for r in mine if r.status == "passed"]
        seen = passed or mine
        kinds = _kinds([f for r in seen for f in r.flags or ()])
        if passed:
            loose = any(r.flags is None or not any(map(counts_against, r.flags)) for r in passed)
            outcomes.append(
                CheatOutcome(cheat.name, "passes", kinds, "hackable" if loose else "caught")
            )
        else:
            status: CheatStatus = "error" if all(r.status == "error" for r in mine) else "fails"
            outcomes.append(CheatOutcome(cheat.name, status, kinds, "holds"))
    return tuple(outcomes)


def task_verdict(controls: str, outcomes: Sequence[CheatOutcome]) -> TaskVerdict:
    """The task's verdict: `broken` when the controls say so (they must hold first), else
    `hackable` when a cheat passes unflagged, else the controls' (`flaky` or `ok`).

    >>> task_verdict("ok", [CheatOutcome("a", "passes", (), "hackable")])
    'hackable'
    """
    if controls == "broken":
        return "broken"
    if any(o.verdict == "hackable" for o in outcomes):
        return "hackable"
    return "flaky" if controls == "flaky" else "ok"
