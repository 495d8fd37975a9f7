"""The public surface of the core: curated, documented, importable without the interpreters."""

from __future__ import annotations

import inspect
import subprocess
import sys

import ssegrade


def test_every_public_name_exists_and_is_documented() -> None:
    assert sorted(ssegrade.__all__) == sorted(set(ssegrade.__all__))
    for name in ssegrade.__all__:
        value = getattr(ssegrade, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def test_core_imports_no_interpreter_or_io_library() -> None:
    code = (
        "import sys, ssegrade; "
        "banned = ('interpreters', 'sh', 'subprocess', 'httpx', 'click', 'rich', 'uvicorn'); "
        "print([m for m in banned if m in sys.modules])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


# The public surface, exactly: a change here is a deliberate edit of this list.
PUBLIC = [
    "Action",
    "ApplyDiff",
    "ApplyError",
    "ApplyFailed",
    "Archive",
    "ArchiveError",
    "Bench",
    "BenchSession",
    "Capture",
    "CaptureError",
    "CaptureTree",
    "Check",
    "CheckFinished",
    "CheckOutcome",
    "CheckPatch",
    "CheckRecord",
    "CheckStarted",
    "Crashed",
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
    "ReadTaskFile",
    "ResultError",
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


def test_the_public_surface_is_exactly_the_snapshot() -> None:
    assert sorted(ssegrade.__all__) == PUBLIC
