"""ssegrade: the pure grading core.

Everything here describes and decides; nothing does I/O. This root is a small face:
the verdict, the `result.json` and task documents, the run loop, the grading program and its
bencher layer, the effects' base, and the one exception base. Each name is loaded on first
use (PEP 562), so `import ssegrade` loads this module alone. Everything else stays importable
from its own module: the effects and their answers from `ssegrade.effects` and
`ssegrade.answers`, the verdict's endings from `ssegrade.verdict`. Embed it to derive a
status, validate a `result.json`, parse a task config, or run the grading program with your own
interpreter. Features are reached by subpackage:

- `ssegrade.report`: the report and its statistics;
- `ssegrade.batch`: batch grading's job lines and documents, and task verification;
- `ssegrade.protocol`: the daemon's documents and request rules, with the difficulty gate;
- `ssegrade.trace`: traces, and their replay with the current rules;
- `ssegrade.guard`: the patch guard; `ssegrade.preview`: the agent's `test_patch`;
- `ssegrade.testing`: the fake world and the rest of the kit for testing interpreters.

For example:

>>> from ssegrade import parse_result
>>> parse_result(b'{"patch_result":{"build_success":true}}').unwrap().patch_result.status
'passed'
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from ssegrade.bencher import BenchSession, bencher_interpreter
    from ssegrade.effects import Effect, GradingEffect, TimeLimitReached
    from ssegrade.errors import SsegradeError
    from ssegrade.program import GradeOptions, grade
    from ssegrade.result import (
        EvaluationResult,
        PatchResult,
        ResultError,
        RuntimeResult,
        Status,
        parse_result,
        result_schema,
        status_of,
    )
    from ssegrade.run import Deadline, Interpreter, Observer, run
    from ssegrade.task import Task, TaskError, parse_task
    from ssegrade.verdict import CheckOutcome, Ending, Finished, Outcomes, decide

_HOMES = {
    # the verdict
    "CheckOutcome": "ssegrade.verdict",
    "Ending": "ssegrade.verdict",
    "Finished": "ssegrade.verdict",
    "Outcomes": "ssegrade.verdict",
    "decide": "ssegrade.verdict",
    # the documents
    "EvaluationResult": "ssegrade.result",
    "PatchResult": "ssegrade.result",
    "RuntimeResult": "ssegrade.result",
    "Status": "ssegrade.result",
    "parse_result": "ssegrade.result",
    "result_schema": "ssegrade.result",
    "status_of": "ssegrade.result",
    "Task": "ssegrade.task",
    "TaskError": "ssegrade.task",
    "parse_task": "ssegrade.task",
    # the run loop
    "Deadline": "ssegrade.run",
    "Interpreter": "ssegrade.run",
    "Observer": "ssegrade.run",
    "run": "ssegrade.run",
    "Effect": "ssegrade.effects",
    "GradingEffect": "ssegrade.effects",
    "TimeLimitReached": "ssegrade.effects",
    # the grading program
    "GradeOptions": "ssegrade.program",
    "grade": "ssegrade.program",
    "BenchSession": "ssegrade.bencher",
    "bencher_interpreter": "ssegrade.bencher",
    # the errors
    "ResultError": "ssegrade.result",
    "SsegradeError": "ssegrade.errors",
}
"""Each public name and the module it lives in."""

__all__ = [
    "BenchSession",
    "CheckOutcome",
    "Deadline",
    "Effect",
    "Ending",
    "EvaluationResult",
    "Finished",
    "GradeOptions",
    "GradingEffect",
    "Interpreter",
    "Observer",
    "Outcomes",
    "PatchResult",
    "ResultError",
    "RuntimeResult",
    "SsegradeError",
    "Status",
    "Task",
    "TaskError",
    "TimeLimitReached",
    "bencher_interpreter",
    "decide",
    "grade",
    "parse_result",
    "parse_task",
    "result_schema",
    "run",
    "status_of",
]


lazy_face(__name__, _HOMES)


def __dir__() -> list[str]:
    """The module's own names and the public ones."""
    return sorted({*globals(), *__all__})
