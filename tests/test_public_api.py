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
    "ControlRun",
    "Crashed",
    "Deadline",
    "Discard",
    "Effect",
    "Ending",
    "EvaluationResult",
    "Finished",
    "Flag",
    "FreshCopy",
    "GradeOptions",
    "GradingEffect",
    "GuardFacts",
    "GuardReport",
    "Interpreter",
    "Job",
    "JobProblem",
    "LEVELS",
    "Level",
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
    "PreviewReport",
    "PreviewResult",
    "ProvePatch",
    "ReadTaskFile",
    "Report",
    "ResultError",
    "RunRecord",
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
    "Tally",
    "Task",
    "TaskError",
    "TimeLimitReached",
    "TimedOut",
    "Trace",
    "TraceError",
    "TraceStep",
    "Unstage",
    "Verification",
    "Workspace",
    "WriteArtifact",
    "WriteGuard",
    "WriteResult",
    "aggregate",
    "allowed",
    "bench",
    "bencher_interpreter",
    "bound_log",
    "check_answer",
    "compare",
    "compare_all",
    "decide",
    "dump_trace",
    "grade",
    "guard",
    "guard_schema",
    "holm",
    "is_blank",
    "job_digest",
    "judge",
    "mcnemar_exact",
    "parse_difficulty",
    "parse_jobs",
    "parse_result",
    "parse_run",
    "parse_task",
    "parse_trace",
    "pass_at_k",
    "pass_hat_k",
    "poc_folder",
    "prepare",
    "preview",
    "render",
    "result_schema",
    "run",
    "status_of",
    "summary_document",
    "support_folders",
    "task_path",
    "wilson",
]


def test_the_public_surface_is_exactly_the_snapshot() -> None:
    assert sorted(ssegrade.__all__) == PUBLIC
