"""ssegrade: the pure grading core.

Everything here describes and decides; nothing does I/O. This root holds the kernel: the
effects and their answers, the run loop, the grading program and its bencher layer, the
verdict, and the `result.json` and task models. Embed it to derive a status, validate a
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

from ssegrade.bencher import BenchSession, bencher_interpreter
from ssegrade.effects import (
    Action,
    ApplyDiff,
    ApplyError,
    Archive,
    ArchiveError,
    Bench,
    BenchEffect,
    Capture,
    CaptureError,
    CaptureTree,
    ChangedFiles,
    CheckFinished,
    CheckPatch,
    CheckRecord,
    CheckStarted,
    DaemonRead,
    Discard,
    Effect,
    FreshCopy,
    GradingEffect,
    NewSession,
    Notify,
    ObserveGuard,
    Prepared,
    PrepareError,
    PrepareGrading,
    PreviewEffect,
    ProvePatch,
    ReadArtifact,
    ReadDialog,
    ReadTaskFile,
    ResultsEffect,
    RunScript,
    ScanObjects,
    ScriptNotStarted,
    ScriptResult,
    SpillLog,
    Staged,
    StageFiles,
    StageItem,
    SystemEffect,
    TimeLimitReached,
    Unstage,
    WorkEffect,
    Workspace,
    WriteArtifact,
    WriteGuard,
    WriteResult,
)
from ssegrade.guard.facts import GuardFacts, ObjectScan
from ssegrade.guard.model import GuardReport
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
from ssegrade.task import Check, Task, TaskError, parse_task
from ssegrade.verdict import (
    ApplyFailed,
    CheckOutcome,
    Crashed,
    Ending,
    Finished,
    Outcomes,
    TimedOut,
    decide,
)

__all__ = [
    "Action",
    "ApplyDiff",
    "ApplyError",
    "ApplyFailed",
    "Archive",
    "ArchiveError",
    "Bench",
    "BenchEffect",
    "BenchSession",
    "Capture",
    "CaptureError",
    "CaptureTree",
    "ChangedFiles",
    "Check",
    "CheckFinished",
    "CheckOutcome",
    "CheckPatch",
    "CheckRecord",
    "CheckStarted",
    "Crashed",
    "DaemonRead",
    "Deadline",
    "Discard",
    "Effect",
    "Ending",
    "EvaluationResult",
    "Finished",
    "FreshCopy",
    "GradeOptions",
    "GradingEffect",
    "GuardFacts",
    "GuardReport",
    "Interpreter",
    "NewSession",
    "Notify",
    "ObjectScan",
    "ObserveGuard",
    "Observer",
    "Outcomes",
    "PatchResult",
    "PrepareError",
    "PrepareGrading",
    "Prepared",
    "PreviewEffect",
    "ProvePatch",
    "ReadArtifact",
    "ReadDialog",
    "ReadTaskFile",
    "ResultError",
    "ResultsEffect",
    "RunScript",
    "RuntimeResult",
    "ScanObjects",
    "ScriptNotStarted",
    "ScriptResult",
    "SpillLog",
    "StageFiles",
    "StageItem",
    "Staged",
    "Status",
    "SystemEffect",
    "Task",
    "TaskError",
    "TimeLimitReached",
    "TimedOut",
    "Unstage",
    "WorkEffect",
    "Workspace",
    "WriteArtifact",
    "WriteGuard",
    "WriteResult",
    "bencher_interpreter",
    "decide",
    "grade",
    "parse_result",
    "parse_task",
    "result_schema",
    "run",
    "status_of",
]
