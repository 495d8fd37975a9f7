"""Finding and reading run folders (`interpreters.report.io`) on real folder trees."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import interpreters.report.io
from interpreters.report.io import NoRuns, Scanned, load_runs, scan_tasks
from interpreters.report.reader import Counted, Document, _frame, read_frames
from tests.support.runfolders import summary, write_run


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


def mixed_tree(root: Path) -> None:
    """Runs of every kind the reader meets: good, nested models, result.json only, a bad
    summary beside a good grade, an empty one, links and a FIFO, files the page links to."""
    good = write_run(root, "t1/openai/gpt-5/codex/r1", summary(task="t1"))
    (good / "final.patch").write_text("")
    (good / "result.json").write_text("{}")
    (good / "logs").mkdir()
    (good / "logs" / "summary.json").write_text("{}")  # inside a run folder: not a run
    write_run(root, "t1/org/team/m/a/r2", summary(task="t1"))
    graded = write_run(root, "t2/m/a/r1", {"patch_result": {"status": "failed"}}, "result.json")
    flagged = {"checked": True, "flags": [{"kind": "tests"}, {"kind": "build-config"}]}
    (graded / "guard.json").write_text(json.dumps(flagged))
    bad = write_run(root, "t2/m/a/r2", "{oops")
    (bad / "result.json").write_text(json.dumps({"patch_result": {"status": "passed"}}))
    (bad / "guard.json").write_text(json.dumps({"checked": True, "flags": []}))
    write_run(root, "t2/m/a/r3", "")
    (root / "t2/m/a/latest").symlink_to("r1")
    linked = write_run(root, "t3/m/a/r1", None)
    (linked / "summary.json").symlink_to(good / "logs" / "summary.json")
    fifo = write_run(root, "t3/m/a/r2", None)
    os.mkfifo(fifo / "summary.json")
    beside = write_run(root, "t3/m/a/r3", {"patch_result": {"status": "passed"}}, "result.json")
    (beside / "guard.json").symlink_to(graded / "guard.json")  # never followed: no record


@pytest.mark.parametrize("files", [False, True])
def test_the_reading_process_reads_what_reading_here_reads(tmp_path: Path, files: bool) -> None:
    """Read in a process of its own (as the command reads) or here, the same runs come in the
    same tasks, with the same warnings, folders counted, files the page links to, and patch
    guard flags (from the `guard.json` beside a `result.json`, never through a link)."""
    mixed_tree(tmp_path)
    Tasks = list[list[tuple[str, Any]]]

    def scan(parallel: bool) -> tuple[Tasks, list[dict[str, frozenset[str]]], Any]:
        tasks: Tasks = []
        ran: list[dict[str, frozenset[str]]] = []

        def take(records: list[Any], found: dict[str, frozenset[str]]) -> None:
            tasks.append([(r.folder, r.flags) for r in records])
            ran.append(found)

        scanned = Scanned()
        scan_tasks(tmp_path, take, scanned, files=files, parallel=parallel)
        return tasks, ran, scanned

    here, there = scan(False), scan(True)
    assert here == there
    tasks, ran, scanned = here
    assert tasks == [
        [("t1/openai/gpt-5/codex/r1", None), ("t1/org/team/m/a/r2", None)],
        [("t2/m/a/r1", ("build-config", "tests")), ("t2/m/a/r2", ())],
        [("t3/m/a/r3", None)],
    ]
    assert scanned.folders == 8
    assert len(scanned.warnings) == 4
    if files:
        assert ran[0]["t1/openai/gpt-5/codex/r1"] == {"result.json", "final.patch", "logs"}
    else:
        assert ran[0] == {}


def test_a_reading_process_that_fails_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the reading process ends before it said it was done, the report stops with one
    line giving its last word."""
    write_run(tmp_path, "t1/m/a/r1", summary())

    def broken(*_: Any) -> subprocess.Popen[bytes]:
        command = [sys.executable, "-c", "import sys; sys.exit('cannot go on')"]
        return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)

    monkeypatch.setattr(interpreters.report.io, "_child", broken)
    with pytest.raises(NoRuns, match=r"could not be read \(cannot go on\)$"):
        scan_tasks(tmp_path, lambda *_: None, Scanned(), parallel=True)


@given(
    st.text(max_size=20).filter(lambda t: "\0" not in t and t.isprintable()),
    st.sampled_from(["summary.json", "result.json"]),
    st.none() | st.frozensets(st.sampled_from(["result.json", "final.patch", "logs"])),
    st.none() | st.binary(max_size=64),
    st.binary(max_size=64),
)
def test_a_document_crosses_the_pipe_whole(
    folder: str, name: str, files: frozenset[str] | None, guard: bytes | None, data: bytes
) -> None:
    """Property: a document framed by the reading process reads back the same, whatever bytes
    its guard file and its document hold (NULs included)."""
    doc = Document(folder, name, data, files, guard)
    stream = io.BytesIO(_frame(doc) + _frame(Counted(1)))
    assert list(read_frames(stream)) == [doc, Counted(1)]


def test_a_containment_of_another_type_is_no_mode_and_the_run_still_reads(tmp_path: Path) -> None:
    """`containment` only informs: a summary whose value is not text is read all the same,
    its mode unknown."""
    write_run(tmp_path, "t1/m/a/r1", summary(containment="weak"))
    write_run(tmp_path, "t2/m/a/r1", summary(task="t2", containment=5))
    write_run(tmp_path, "t3/m/a/r1", summary(task="t3", containment={"mode": "full"}))
    loaded = load_runs(tmp_path)
    assert loaded.warnings == []
    assert {r.task: r.containment for r in loaded.records} == {"t1": "weak", "t2": None, "t3": None}
