"""The public surface of the core: curated, documented, importable without the interpreters."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

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


def test_importing_the_core_loads_its_face_alone() -> None:
    """`import ssegrade` loads the root module and a handful of the standard library's, no
    model, no pydantic: each public name is loaded on first use."""
    loaded = _loaded_by("import ssegrade")
    ours = [name for name in loaded if name.startswith("ssegrade")]
    assert ours == ["ssegrade", "ssegrade._lazy"]
    assert len(loaded) <= 7, loaded
    assert "pydantic" not in loaded


def test_a_public_name_loads_its_module_on_first_use() -> None:
    loaded = _loaded_by("from ssegrade import decide")
    assert "ssegrade.internal.verdict" in loaded
    assert "ssegrade.report" not in loaded


def test_the_effect_vocabulary_does_not_load_the_guard() -> None:
    loaded = _loaded_by("import ssegrade.internal.effects")
    assert [name for name in loaded if name.startswith("ssegrade.guard.")] == []
    assert "ssegrade.guard" not in loaded


def test_a_name_outside_the_face_is_not_served_by_the_root() -> None:
    with pytest.raises(AttributeError, match="no attribute 'Action'"):
        ssegrade.Action  # type: ignore[attr-defined]  # noqa: B018 - the point of the test
    with pytest.raises(ImportError):
        exec("from ssegrade import ObserveGuard", {})
    from ssegrade.internal.effects import ObserveGuard  # its own module still serves it

    assert ObserveGuard.__module__ == "ssegrade.internal.effects"


def test_dir_lists_the_face() -> None:
    assert set(ssegrade.__all__) <= set(dir(ssegrade))


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


FEATURES = [
    "ssegrade.batch",
    "ssegrade.guard",
    "ssegrade.preview",
    "ssegrade.protocol",
    "ssegrade.report",
    "ssegrade.testing",
    "ssegrade.trace",
]


def test_a_feature_package_is_its_face_and_its_modules_are_private() -> None:
    """Each feature package serves every name of its `__all__`; its modules are `_name`, but
    the testing kit's strategies (public, apart for they import hypothesis)."""
    public = []
    for feature in FEATURES:
        package = importlib.import_module(feature)
        assert [name for name in package.__all__ if not hasattr(package, name)] == []
        modules = pkgutil.iter_modules(package.__path__)
        public += [f"{feature}.{m.name}" for m in modules if not m.name.startswith("_")]
    assert public == ["ssegrade.testing.strategies"]


# The public surface, exactly: a change here is a deliberate edit of this list.
PUBLIC = [
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


def test_the_public_surface_is_exactly_the_snapshot() -> None:
    assert sorted(ssegrade.__all__) == PUBLIC
    assert len(PUBLIC) <= 30


def test_the_architecture_document_lists_every_public_name() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "architecture.md").read_text()
    missing = [name for name in PUBLIC if f"`{name}`" not in text]
    assert missing == []


def test_the_run_loop_stays_the_public_run_once_its_module_is_imported() -> None:
    """`ssegrade.internal.run` is the run loop's module: the loop is the public name."""
    code = "import ssegrade.internal.run; from ssegrade import run; print(callable(run))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "True"


def test_the_effect_vocabulary_face_serves_every_effect_and_answer() -> None:
    """`ssegrade.effects` is the vocabulary's whole list, served from `ssegrade.internal`."""
    import ssegrade.effects as face
    import ssegrade.internal.effects as vocabulary

    assert face.__all__ == vocabulary.__all__
    assert [
        name for name in face.__all__ if getattr(face, name) is not getattr(vocabulary, name)
    ] == []
    assert {"RunScript", "ScriptResult", "MayRunAhead", "Effect"} <= set(face.__all__)


def test_the_grading_entry_face_serves_every_name() -> None:
    """`interpreters` names the grading entry (`grade`, `Request`, …) and serves each name."""
    import interpreters

    assert [name for name in interpreters.__all__ if not hasattr(interpreters, name)] == []
    assert {"grade", "Request", "Limits", "ScriptOptions", "read_patch", "Graded"} <= set(
        interpreters.__all__
    )
