"""Finding and reading run folders (`interpreters.report_io`) on real folder trees."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from interpreters.report_io import NoRuns, load_runs
from tests.runfolders import summary, write_run


def ids(root: Path) -> list[tuple[str, str, str, str]]:
    """(task, model, agent, run id) of every run read, sorted."""
    return sorted((r.task, r.model, r.agent, r.run_id) for r in load_runs(root).records)


def test_models_with_slashes_make_extra_levels(tmp_path: Path) -> None:
    """A model may span folder levels; names come from the folders when the file is silent."""
    write_run(tmp_path, "t1/gpt-5/codex/r1", summary())
    write_run(tmp_path, "t1/openai/gpt-5/codex/r1", summary())
    write_run(tmp_path, "t1/org/team/model/agent/r7", summary())
    assert ids(tmp_path) == [
        ("t1", "gpt-5", "codex", "r1"),
        ("t1", "openai/gpt-5", "codex", "r1"),
        ("t1", "org/team/model", "agent", "r7"),
    ]


def test_a_summary_naming_another_run_than_its_folder_is_left_out(tmp_path: Path) -> None:
    """The run config's model and agent and the task config's id must be its folder's: a copy
    elsewhere, or a tool's output, is left out, counted in one line."""
    write_run(tmp_path, "folder-task/m/a/r1", summary(task="real-task", model="m", agent="a"))
    write_run(tmp_path, "real-task/m/a/r2", summary(task="real-task", model="x/y", agent="a"))
    write_run(tmp_path, "real-task/m/a/r3", summary(task="real-task", model="m", agent="z"))
    write_run(tmp_path, "real-task/x/y/z/r4", summary(task="real-task", model="x/y", agent="z"))
    loaded = load_runs(tmp_path)
    assert [(r.task, r.model, r.agent, r.run_id) for r in loaded.records] == [
        ("real-task", "x/y", "z", "r4")
    ]
    assert loaded.left_out == {"folder": 3}
    assert loaded.warnings == [
        "left out 3 run folders whose document names another task, model or agent than the folder"
    ]


def test_runs_of_ssegrade_verify_are_left_out(tmp_path: Path) -> None:
    """`<task>/<empty|reference>/<n>/result.json` one level down reads like a run: it is not."""
    grade = json.dumps({"patch_result": {"status": "passed", "build_success": True}})
    for control in ("empty", "reference"):
        write_run(tmp_path, f"verify/tlv-001/{control}/1", grade, name="result.json")
    write_run(tmp_path, "t1/m/a/r1", summary())
    loaded = load_runs(tmp_path)
    assert [r.run_id for r in loaded.records] == ["r1"]
    assert loaded.left_out == {"verification": 2}


def test_links_are_not_runs(tmp_path: Path) -> None:
    """A `latest` link to a run folder, or any link, is neither read nor followed."""
    run = write_run(tmp_path, "t1/m/a/r1", summary())
    (run.parent / "latest").symlink_to(run.name)
    (tmp_path / "t1" / "m" / "loop").symlink_to(tmp_path)
    (tmp_path / "t2").symlink_to(tmp_path / "t1")
    assert ids(tmp_path) == [("t1", "m", "a", "r1")]


def test_folders_inside_a_run_folder_are_not_searched(tmp_path: Path) -> None:
    """Once a folder is a run folder, nothing below it is read."""
    run = write_run(tmp_path, "t1/m/a/r1", summary())
    write_run(run, "logs/x", summary(task="nested"))
    write_run(run, "a/b/c/d", summary(task="deeper"))
    assert ids(tmp_path) == [("t1", "m", "a", "r1")]


def test_shallow_folders_are_not_runs(tmp_path: Path) -> None:
    """A folder needs task, model, agent and run id above it: fewer levels are not a run."""
    write_run(tmp_path, "t1/m/a", summary())
    write_run(tmp_path, "t1", summary())
    (tmp_path / "summary.json").write_text(json.dumps(summary()))
    write_run(tmp_path, "t1/m/a/r1", summary())
    assert ids(tmp_path) == [("t1", "m", "a", "r1")]


def test_result_json_when_there_is_no_summary(tmp_path: Path) -> None:
    """result.json is read when summary.json is absent; summary.json wins when both exist."""
    result = {"patch_result": {"build_success": False}, "runtime_result": {"agent_duration": 5}}
    write_run(tmp_path, "t1/m/a/r1", result, name="result.json")
    both = write_run(tmp_path, "t1/m/a/r2", summary(status="passed"))
    (both / "result.json").write_text(json.dumps(result))
    records = {r.run_id: r for r in load_runs(tmp_path).records}
    assert records["r1"].patch.status == "failed"
    assert records["r1"].agent_seconds == 5
    assert records["r2"].patch.status == "passed"


def test_unreadable_files_are_skipped_with_one_warning_each(tmp_path: Path) -> None:
    """Each unreadable file gives one warning line naming it; a bad summary.json falls back to
    result.json; the rest is still read."""
    write_run(tmp_path, "t1/m/a/good", summary())
    bad = write_run(tmp_path, "t1/m/a/bad", "{not json")
    wrong = write_run(tmp_path, "t1/m/a/wrong", {"patch_result": {"status": "splendid"}})
    fallback = write_run(tmp_path, "t1/m/a/fallback", "")
    (fallback / "result.json").write_text(json.dumps({"patch_result": {"status": "failed"}}))
    folder_not_file = write_run(tmp_path, "t1/m/a/dir", None)
    (folder_not_file / "summary.json").mkdir()
    loaded = load_runs(tmp_path)
    assert sorted(r.run_id for r in loaded.records) == ["fallback", "good"]
    assert len(loaded.warnings) == 4
    named = sorted(w.split(": ", 1)[0] for w in loaded.warnings)
    assert named == sorted(str(p / "summary.json") for p in (bad, wrong, fallback, folder_not_file))
    assert all("\n" not in w for w in loaded.warnings)
    assert loaded.folders == 5
    assert loaded.runs == 2


def test_large_files_are_read_whole(tmp_path: Path) -> None:
    """A summary bigger than one read (a long error log) is read to its end."""
    doc = summary(status="failed")
    doc["patch_result"]["error_log"] = "x" * 3_000_000
    doc["spend"] = 9.5
    write_run(tmp_path, "t1/m/a/r1", doc)
    (record,) = load_runs(tmp_path).records
    assert record.spend == 9.5


def test_hostile_documents_are_skipped_not_followed(tmp_path: Path) -> None:
    """A summary.json that is a symbolic link (to any file) or a FIFO is skipped with a
    warning, never followed or waited on; result.json is then tried."""
    secret = tmp_path / "secret.json"
    secret.write_text(json.dumps(summary(task="secret")))
    linked = write_run(tmp_path / "r", "t1/m/a/linked", None)
    (linked / "summary.json").symlink_to(secret)
    fifo = write_run(tmp_path / "r", "t1/m/a/fifo", None)
    os.mkfifo(fifo / "summary.json")
    (fifo / "result.json").write_text(json.dumps({"patch_result": {"status": "failed"}}))
    loaded = load_runs(tmp_path / "r")
    assert [(r.task, r.run_id) for r in loaded.records] == [("t1", "fifo")]
    whys = sorted(w.split(", ", 1)[1] for w in loaded.warnings)
    assert whys == ["it is a symbolic link", "not a regular file"]


def test_an_unfinished_run_is_a_warning(tmp_path: Path) -> None:
    """SSEBench makes an empty result.json when a run starts: skipped with a clear warning."""
    write_run(tmp_path, "t1/m/a/r1", summary())
    write_run(tmp_path, "t1/m/a/r2", "", name="result.json")
    loaded = load_runs(tmp_path)
    assert [r.run_id for r in loaded.records] == ["r1"]
    assert loaded.warnings == [
        f"{tmp_path}/t1/m/a/r2/result.json: skipped, empty (a run not finished?)"
    ]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads every file whatever its mode")
def test_unreadable_permissions_are_a_warning(tmp_path: Path) -> None:
    """A file the user may not read is skipped with a warning naming it."""
    run = write_run(tmp_path, "t1/m/a/r1", summary())
    write_run(tmp_path, "t1/m/a/r2", summary())
    (run / "summary.json").chmod(0)
    loaded = load_runs(tmp_path)
    assert [r.run_id for r in loaded.records] == ["r2"]
    assert loaded.warnings[0].startswith(str(run / "summary.json"))


def test_nothing_found_is_an_error(tmp_path: Path) -> None:
    """An empty tree, a missing folder, a file, or only unreadable runs: NoRuns, one line."""
    with pytest.raises(NoRuns, match="no run folders found"):
        load_runs(tmp_path)
    with pytest.raises(NoRuns, match="no such folder"):
        load_runs(tmp_path / "missing")
    (tmp_path / "file").write_text("x")
    with pytest.raises(NoRuns, match="is not a folder"):
        load_runs(tmp_path / "file")
    write_run(tmp_path, "t/m/a/r", "[]")
    with pytest.raises(NoRuns, match="none of the 1 run folders could be read"):
        load_runs(tmp_path)


def test_gc_state_is_restored(tmp_path: Path) -> None:
    """Reading pauses the garbage collector and turns it back on afterwards."""
    import gc

    write_run(tmp_path, "t1/m/a/r1", summary())
    assert gc.isenabled()
    load_runs(tmp_path)
    assert gc.isenabled()
