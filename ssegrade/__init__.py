"""ssegrade: the pure grading core.

Everything here describes and decides; nothing does I/O. This root is a small face:
the verdict, the `result.json` and task documents, the run loop, the grading program and its
bencher layer, the effects' base, and the one exception base. Each name is loaded on first
use (PEP 562), so `import ssegrade` loads this module alone. The effects an interpreter
answers, with their answers, are the face `ssegrade.effects`; the implementation lives in
`ssegrade.internal`, promised to no other program. Embed it to derive a status, validate a
`result.json`, parse a task config, or run the grading program with your own interpreter.
Features are reached by subpackage:

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
    from ssegrade.internal.bencher import BenchSession, bencher_interpreter
    from ssegrade.internal.effects import Effect, GradingEffect, TimeLimitReached
    from ssegrade.internal.errors import SsegradeError
    from ssegrade.internal.program import GradeOptions, grade
    from ssegrade.internal.result import (
        EvaluationResult,
        PatchResult,
        ResultError,
        RuntimeResult,
        Status,
        parse_result,
        result_schema,
        status_of,
    )
    from ssegrade.internal.run import Deadline, Interpreter, Observer, run
    from ssegrade.internal.task import Task, TaskError, parse_task
    from ssegrade.internal.verdict import (
        CheckOutcome,
        Ending,
        Finished,
        Outcomes,
        decide,
        document,
        not_graded,
    )

_HOMES = {
    # the verdict
    "CheckOutcome": "ssegrade.internal.verdict",
    "Ending": "ssegrade.internal.verdict",
    "Finished": "ssegrade.internal.verdict",
    "Outcomes": "ssegrade.internal.verdict",
    "decide": "ssegrade.internal.verdict",
    "document": "ssegrade.internal.verdict",
    "not_graded": "ssegrade.internal.verdict",
    # the documents
    "EvaluationResult": "ssegrade.internal.result",
    "PatchResult": "ssegrade.internal.result",
    "RuntimeResult": "ssegrade.internal.result",
    "Status": "ssegrade.internal.result",
    "parse_result": "ssegrade.internal.result",
    "result_schema": "ssegrade.internal.result",
    "status_of": "ssegrade.internal.result",
    "Task": "ssegrade.internal.task",
    "TaskError": "ssegrade.internal.task",
    "parse_task": "ssegrade.internal.task",
    # the run loop
    "Deadline": "ssegrade.internal.run",
    "Interpreter": "ssegrade.internal.run",
    "Observer": "ssegrade.internal.run",
    "run": "ssegrade.internal.run",
    "Effect": "ssegrade.internal.effects",
    "GradingEffect": "ssegrade.internal.effects",
    "TimeLimitReached": "ssegrade.internal.effects",
    # the grading program
    "GradeOptions": "ssegrade.internal.program",
    "grade": "ssegrade.internal.program",
    "BenchSession": "ssegrade.internal.bencher",
    "bencher_interpreter": "ssegrade.internal.bencher",
    # the errors
    "ResultError": "ssegrade.internal.result",
    "SsegradeError": "ssegrade.internal.errors",
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
    "document",
    "grade",
    "not_graded",
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
