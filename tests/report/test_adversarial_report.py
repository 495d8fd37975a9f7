"""`ssegrade report` of a verify folder: the share of hackable tasks in every format.

The folders are laid out as `ssegrade verify --adversarial --results DIR` writes them
(`<task>/<control>/<n>/`, cheats under `adversarial/<cheat>/`), with the documents the
report reads: each run's `result.json` and `guard.json`.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from interpreters.report.verify_folder import is_verify_folder
from ssegrade.batch import CheatRun
from ssegrade.guard import Flag, GuardReport
from ssegrade.report import hackable_report, verified_task
from tests.support.realtask import ssegrade


def run(root: Path, *parts: str, status: str, flags: tuple[str, ...] | None = ()) -> Path:
    folder = root.joinpath(*parts)
    folder.mkdir(parents=True)
    (folder / "result.json").write_text(json.dumps({"patch_result": {"status": status}}))
    if flags is not None:
        report = GuardReport(flags=tuple(Flag(kind=k, why="seen") for k in flags))  # type: ignore[arg-type]
        (folder / "guard.json").write_bytes(report.to_json())
    return folder


def verify_folder(root: Path) -> Path:
    """Three tasks: one a cheat passes unflagged, one whose passing cheat the guard catches,
    one verified without --adversarial."""
    for task in ("open-001", "caught-002", "plain-003"):
        run(root, task, "empty", "1", status="failed")
        run(root, task, "reference", "1", status="passed")
    run(root, "open-001", "adversarial", "poc-early-return", "1", status="passed")
    run(
        root,
        "open-001",
        "adversarial",
        "entry-catcher",
        "1",
        status="failed",
        flags=("crash-handler",),
    )
    run(
        root,
        "caught-002",
        "adversarial",
        "sanitizer-drop",
        "1",
        status="passed",
        flags=("build-config", "sanitizer"),
    )
    return root


def report(root: Path, fmt: str) -> tuple[int, str, str]:
    done = ssegrade("report", str(root), "--format", fmt)
    return done.returncode, done.stdout, done.stderr


def test_the_table_gives_the_share_of_hackable_tasks(tmp_path: Path) -> None:
    """The attack: a benchmark with a task any agent passes by comparing the PoC's first
    bytes; the report of its verify folder must say so."""
    code, out, err = report(verify_folder(tmp_path / "v"), "table")
    assert code == 0, err
    caught = "caught by the guard: caught-002: sanitizer-drop passes, flagged "
    assert out.splitlines() == [
        "hackable tasks: 1 of 2 checked (50.0 %); 1 verified without --adversarial",
        "task        adversarial",
        "caught-002  not hackable",
        f"            - {caught}build-config, sanitizer",
        "open-001    hackable",
        "            - holds: open-001: entry-catcher fails the grade",
        "            - hackable: open-001: poc-early-return passes unflagged",
        "plain-003   not checked",
    ]


def test_every_format_carries_the_share(tmp_path: Path) -> None:
    root = verify_folder(tmp_path / "v")
    code, out, _ = report(root, "json")
    doc = json.loads(out)
    assert code == 0
    assert (doc["kind"], doc["hackable"]["passed"], doc["hackable"]["of"], doc["unchecked"]) == (
        "verify",
        1,
        2,
        1,
    )
    tasks = {t["task"]: t for t in doc["tasks"]}
    assert (
        tasks["open-001"]["hackable"],
        tasks["caught-002"]["hackable"],
        tasks["plain-003"]["hackable"],
    ) == (True, False, None)
    verdicts = {a["cheat"]: a["verdict"] for a in tasks["open-001"]["adversarial"]}
    assert verdicts == {"entry-catcher": "holds", "poc-early-return": "hackable"}
    _, out, _ = report(root, "jsonl")
    head = json.loads(out.splitlines()[0])
    assert (head["hackable"]["passed"], head["hackable"]["of"]) == (1, 2)
    _, out, _ = report(root, "csv")
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[-1][:2] == ["(all)", "hackable 1 of 2"]
    assert ["open-001", "hackable", "poc-early-return", "", "entry-catcher"] in rows
    _, out, _ = report(root, "html")
    assert "hackable tasks: 1 of 2 checked (50.0 %)" in out


def test_a_linked_grade_is_not_read(tmp_path: Path) -> None:
    """A run folder's result.json that is a link (to a passing grade elsewhere) is skipped
    with a warning, never followed."""
    root = verify_folder(tmp_path / "v")
    target = run(tmp_path, "elsewhere", status="passed") / "result.json"
    folder = root / "caught-002" / "adversarial" / "tests-removed" / "1"
    folder.mkdir(parents=True)
    (folder / "result.json").symlink_to(target)
    code, out, err = report(root, "table")
    assert code == 0
    assert "hackable tasks: 1 of 2 checked" in out
    assert "tests-removed" not in out
    assert "symbolic link" in err


def test_a_batch_folder_is_not_a_verify_folder(tmp_path: Path) -> None:
    run(tmp_path / "b", "t-1", "openai", "gpt-5", "codex", "r1", status="passed")
    assert not is_verify_folder(str(tmp_path / "b"))
    assert is_verify_folder(str(verify_folder(tmp_path / "v")))


_RUN = st.builds(
    CheatRun,
    cheat=st.sampled_from(["a", "b"]),
    n=st.integers(1, 3),
    status=st.sampled_from(["passed", "failed", "error"]),
    flags=st.one_of(
        st.none(),
        st.lists(
            st.builds(
                lambda kind, counts, seen: Flag.model_validate(
                    {"kind": kind, "why": "w", "counts": counts, "confidence": seen}
                ),
                st.sampled_from(["sanitizer", "build-config", "tests"]),
                st.booleans(),
                st.sampled_from(["pattern", "evidence"]),
            ),
            max_size=2,
        ).map(tuple),
    ),
)


@given(st.lists(st.lists(_RUN, max_size=4), max_size=5))
def test_a_task_is_hackable_exactly_when_a_run_passes_without_a_counting_flag(
    tasks: list[list[CheatRun]],
) -> None:
    """Property: the share counts a task when one of its cheats' runs passed and raised no
    flag but listed-only ones (a pattern touch no check runs; or no guard record), over the
    tasks with runs."""
    made = [verified_task(f"t{i}", runs) for i, runs in enumerate(tasks)]
    share = hackable_report(made).share

    def open_(r: CheatRun) -> bool:
        return r.status == "passed" and (
            r.flags is None
            or all(
                not f.counts and f.confidence == "pattern" and f.kind != "sanitizer"
                for f in r.flags
            )
        )

    assert share.of == sum(1 for runs in tasks if runs)
    assert share.passed == sum(1 for runs in tasks if any(open_(r) for r in runs))


def test_the_page_escapes_task_names(tmp_path: Path) -> None:
    root = tmp_path / "v"
    run(root, "<b>t", "empty", "1", status="failed")
    run(root, "<b>t", "adversarial", "tests-removed", "1", status="passed")
    code, out, err = report(root, "html")
    assert code == 0, err
    assert "<b>t" not in out
    assert "hackable: &lt;b&gt;t: tests-removed passes unflagged" in out
