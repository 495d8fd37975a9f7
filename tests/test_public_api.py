"""The public surface of the core: curated, documented, importable without the interpreters."""

from __future__ import annotations

import importlib
import inspect
import subprocess
import sys

import pytest

import ssegrade


def test_every_public_name_exists_and_is_documented() -> None:
    assert sorted(ssegrade.__all__) == sorted(set(ssegrade.__all__))
    for name in ssegrade.__all__:
        value = getattr(ssegrade, name)
        if inspect.isfunction(value) or inspect.isclass(value):
            assert inspect.getdoc(value), f"{name} has no docstring"


def _loaded_by(statement: str) -> list[str]:
    """The modules a fresh interpreter holds once it ran `statement`, beyond its start-up's."""
    code = (
        "import sys; before = set(sys.modules); "
        f"{statement}; "
        "print('\\n'.join(sorted(set(sys.modules) - before)))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_core_imports_no_interpreter_or_io_library() -> None:
    banned = {"interpreters", "sh", "subprocess", "httpx", "click", "rich", "uvicorn"}
    banned |= {"fastapi", "starlette", "jinja2", "hypothesis", "ray"}
    loaded = {name.partition(".")[0] for name in _loaded_by("import ssegrade")}
    assert loaded & banned == set()


# The modules of the core `import ssegrade` loads: the kernel alone, no feature subpackage.
KERNEL = [
    "ssegrade",
    "ssegrade.answers",
    "ssegrade.bencher",
    "ssegrade.checks",
    "ssegrade.effects",
    "ssegrade.guard",
    "ssegrade.guard.check",
    "ssegrade.guard.code",
    "ssegrade.guard.counting",
    "ssegrade.guard.diff",
    "ssegrade.guard.facts",
    "ssegrade.guard.imports",
    "ssegrade.guard.literal",
    "ssegrade.guard.model",
    "ssegrade.guard.patching",
    "ssegrade.guard.pinning",
    "ssegrade.guard.reading",
    "ssegrade.guard.rules",
    "ssegrade.guard.sanitizers",
    "ssegrade.guard.syntax",
    "ssegrade.guard.tree_literals",
    "ssegrade.guarding",
    "ssegrade.program",
    "ssegrade.result",
    "ssegrade.run",
    "ssegrade.task",
    "ssegrade.verdict",
]


def test_importing_the_core_loads_the_kernel_alone() -> None:
    loaded = [name for name in _loaded_by("import ssegrade") if name.split(".")[0] == "ssegrade"]
    assert loaded == KERNEL


@pytest.mark.parametrize(
    ("feature", "names"),
    [
        ("ssegrade.report", ["aggregate", "compare_all", "parse_run", "wilson", "holm"]),
        ("ssegrade.batch", ["parse_jobs", "summary_document", "batch_summary", "judge"]),
        ("ssegrade.protocol", ["LEVELS", "allowed", "parse_difficulty", "gate"]),
        ("ssegrade.trace", ["parse_trace", "dump_trace", "Replay", "replay"]),
        ("ssegrade.guard", ["guard", "guard_schema", "Flag"]),
        ("ssegrade.preview", ["preview", "render", "PreviewResult"]),
    ],
)
def test_features_are_reached_by_subpackage(feature: str, names: list[str]) -> None:
    module = importlib.import_module(feature)
    for name in names:
        assert name in module.__all__
        assert name not in ssegrade.__all__


# The public surface, exactly: a change here is a deliberate edit of this list.
PUBLIC = [
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


def test_the_public_surface_is_exactly_the_snapshot() -> None:
    assert sorted(ssegrade.__all__) == PUBLIC
