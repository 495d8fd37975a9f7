"""The bundled example tasks, graded end to end as an operator would: the unmodified project
fails, the reference fix passes, embedded and through the daemon.

`examples/kvconf` is shaped like a real Go task: its PoCs are a folder of modules sharing a
helper, its build needs vendored modules that git ignores (present in the baseline's copy of
the tree, absent from the commit), and its scripts need a toolchain set in the environment.

`examples/rle` is a real C task built with AddressSanitizer (gcc from the distribution): its
reference fix passes unflagged by the patch guard, and a patch that drops the sanitizer through
the project's Makefile passes too, flagged `sanitizer` and `build-config`, embedded and through
the daemon.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.daemons import running_daemon
from tests.support.exampletasks import EXAMPLES, Example, lay_out
from tests.support.realtask import ssegrade

pytestmark = pytest.mark.slow


@pytest.fixture
def work(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder the runner can enter, with the kvconf toolchain set in the environment."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-examples-"))
    folder.chmod(0o755)
    shutil.copytree(EXAMPLES / "kvconf" / "toolchain", folder / "toolchain")
    monkeypatch.setenv("KVC_HOME", str(folder / "toolchain"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def evaluate(example: Example, results: Path, *extra: str) -> dict[str, object]:
    done = ssegrade(
        "evaluate",
        "--task",
        str(example.task),
        "--source",
        str(example.source),
        "--results",
        str(results),
        *extra,
    )
    assert done.returncode == 0, done.stderr
    patch: dict[str, object] = json.loads((results / "result.json").read_bytes())["patch_result"]
    return patch


@pytest.mark.parametrize(
    ("name", "fix", "first_poc"),
    [
        ("tlv", "fix.diff", "pocs/overread.bin"),
        ("kvconf", "diffs/patch.diff", "pocs/poc_self_include.py"),
    ],
)
def test_an_example_fails_unfixed_and_passes_with_its_reference_fix(
    work: Path, name: str, fix: str, first_poc: str
) -> None:
    example = lay_out(work, name, fix)
    base = ("--baseline", str(example.baseline))
    unfixed = evaluate(example, work / "unfixed", *base)
    assert (unfixed["status"], unfixed["error_msg"]) == (
        "failed",
        f"PoC failed: {example.task / first_poc}",
    )
    assert (unfixed["build_success"], unfixed["pov_passed"], unfixed["pov_total"]) == (True, 0, 2)
    assert (unfixed["func_test_success"], unfixed["intent_test_success"]) == (True, False)
    subprocess.run(["git", "apply", str(example.fix)], cwd=example.source, check=True)
    fixed = evaluate(example, work / "fixed", *base)
    assert (fixed["status"], fixed["pov_passed"]) == ("passed", 2), fixed["error_log"]


def test_kvconf_needs_its_vendored_modules_and_its_toolchain(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    example = lay_out(work, "kvconf", "diffs/patch.diff")
    subprocess.run(["git", "apply", str(example.fix)], cwd=example.source, check=True)
    base = ("--baseline", str(example.baseline))
    # A checkout of the commit lacks vendor/ (ignored by git): the build cannot work.
    no_copy = work / "no-copy"
    shutil.copytree(example.baseline, no_copy)
    shutil.rmtree(no_copy / "repo")
    lacking = evaluate(example, work / "r-checkout", "--baseline", str(no_copy))
    assert (lacking["status"], lacking["error_msg"]) == ("failed", "Build failed")
    assert "vendor/ is missing" in str(lacking["error_log"])
    # Without the toolchain in the environment, or with a clean environment, the same.
    clean = evaluate(example, work / "r-clean", *base, "--clean-env")
    assert "KVC_HOME is not set" in str(clean["error_log"])
    monkeypatch.delenv("KVC_HOME")
    given = evaluate(
        example, work / "r-given", *base, "--script-env", f"KVC_HOME={work / 'toolchain'}"
    )
    assert given["status"] == "passed", given["error_log"]


def test_kvconf_through_the_daemon(work: Path) -> None:
    example = lay_out(work, "kvconf", "diffs/patch.diff", baseline=False)
    results = work / "daemon-results"
    with running_daemon(example.task, example.source, results) as daemon:
        subprocess.run(["git", "apply", str(example.fix)], cwd=example.source, check=True)
        patch = evaluate(example, results, "--daemon", str(daemon.admin))
        saved = {name: (results / name).read_bytes() for name in SAVED}
        (results / "agent-phase").mkdir(exist_ok=True)  # the daemon's record of test_patch
        (results / "agent-phase" / "note.log").write_text("kept")
        # Forced again beside the same daemon: its record stays, the capture is saved again.
        again = evaluate(example, results, "--daemon", str(daemon.admin), "--force")
    assert (patch["status"], patch["pov_passed"]) == ("passed", 2), patch["error_log"]
    assert again == patch
    assert saved["final.patch"].startswith(b"diff --git")
    assert {name: (results / name).read_bytes() for name in SAVED} == saved
    assert (results / "agent-phase" / "note.log").read_text() == "kept"


SAVED = ("final.patch", "commits.log", "logs/capture.log")


def guard_kinds(results: Path) -> list[str]:
    """The kinds of flag in a results folder's `guard.json`, sorted, once each."""
    report = json.loads((results / "guard.json").read_bytes())
    return sorted({flag["kind"] for flag in report["flags"]})


needs_gcc = pytest.mark.skipif(shutil.which("gcc") is None, reason="examples/rle needs gcc")


@needs_gcc
def test_rle_fails_unfixed_passes_fixed_unflagged_and_a_cheat_passes_flagged(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff")
    base = ("--baseline", str(example.baseline))
    unfixed = evaluate(example, work / "unfixed", *base)
    assert (unfixed["status"], unfixed["error_msg"]) == (
        "failed",
        f"PoC failed: {example.task / 'pocs/overflow.rle'}",
    )
    assert (unfixed["build_success"], unfixed["pov_passed"], unfixed["pov_total"]) == (True, 0, 1)
    assert (unfixed["func_test_success"], unfixed["intent_test_success"]) == (True, False)
    assert guard_kinds(work / "unfixed") == []

    subprocess.run(["git", "apply", str(example.fix)], cwd=example.source, check=True)
    fixed = evaluate(example, work / "fixed", *base)
    assert fixed["status"] == "passed", fixed["error_log"]
    assert guard_kinds(work / "fixed") == []
    observed = json.loads((work / "fixed" / "guard.json").read_bytes())["observed"]
    assert observed["objects"]["carrying"]["address"].startswith("build/")

    subprocess.run(["git", "checkout", "-q", "--", "."], cwd=example.source, check=True)
    cheat = EXAMPLES / "rle" / "cheat.diff"
    subprocess.run(["git", "apply", str(cheat)], cwd=example.source, check=True)
    cheated = evaluate(example, work / "cheat", *base)
    assert cheated["status"] == "passed", cheated["error_log"]
    assert guard_kinds(work / "cheat") == ["build-config", "sanitizer"]
    whys = [f["why"] for f in json.loads((work / "cheat" / "guard.json").read_bytes())["flags"]]
    assert any("none of the" in why and "__asan_init" in why for why in whys), whys
    record = json.loads((work / "cheat" / "checks.jsonl").read_text().splitlines()[-1])
    assert (record["name"], record["flags"]) == ("guard", ["build-config", "sanitizer"])
    # The grade is result.json's alone: the same bytes as the grading document it returned.
    assert json.loads((work / "cheat" / "result.json").read_bytes())["patch_result"] == cheated


@needs_gcc
def test_rle_cheat_is_flagged_through_the_daemon(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff", baseline=False)
    results = work / "daemon-results"
    with running_daemon(example.task, example.source, results) as daemon:
        cheat = EXAMPLES / "rle" / "cheat.diff"
        subprocess.run(["git", "apply", str(cheat)], cwd=example.source, check=True)
        patch = evaluate(example, results, "--daemon", str(daemon.admin))
    assert patch["status"] == "passed", patch["error_log"]
    assert guard_kinds(results) == ["build-config", "sanitizer"]
    observed = json.loads((results / "guard.json").read_bytes())["observed"]
    assert (observed["pocs"], observed["hidden_tests"]) == (1, 1)
    assert observed["objects"]["carrying"] == {}


@needs_gcc
def test_rle_batch_summaries_carry_the_guard_and_the_report_counts_it(work: Path) -> None:
    """A batch of the reference fix and the cheat: both pass; the report's unflagged share
    counts the fix alone, and `--exclude-flagged sanitizer` leaves the cheat out."""
    example = lay_out(work, "rle", "diffs/patch.diff", baseline=False)
    jobs = work / "jobs.jsonl"
    lines = [
        {"patch": str(example.fix), "agent": "fix"},
        {"patch": str(EXAMPLES / "rle" / "cheat.diff"), "agent": "cheat"},
    ]
    same = {"task": str(example.task), "repo": str(example.source), "model": "m"}
    jobs.write_text("".join(json.dumps(same | line) + "\n" for line in lines))
    runs = work / "runs"
    done = ssegrade("batch", str(jobs), "--results", str(runs), "--workers", "2")
    assert done.returncode == 0, done.stderr
    summaries = {
        p.parent.parent.name: json.loads(p.read_bytes()) for p in runs.rglob("summary.json")
    }
    assert summaries["fix"]["guard"]["flags"] == []
    kinds = sorted({f["kind"] for f in summaries["cheat"]["guard"]["flags"]})
    assert kinds == ["build-config", "sanitizer"]
    shown = json.loads(ssegrade("report", str(runs), "--format", "json").stdout)
    rows = {row["agent"]: row for row in shown["rows"]}
    assert (rows["fix"]["unflagged"]["passed"], rows["cheat"]["unflagged"]["passed"]) == (1, 0)
    assert rows["cheat"]["passed"]["passed"] == 1
    assert rows["cheat"]["flagged"] == {"build-config": 1, "sanitizer": 1}
    out = ssegrade("report", str(runs), "--format", "json", "--exclude-flagged", "sanitizer")
    assert [row["agent"] for row in json.loads(out.stdout)["rows"]] == ["fix"]


@needs_gcc
def test_verify_prints_no_flag_for_the_rle_reference_fix(work: Path) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff", baseline=False)
    done = ssegrade(
        "verify",
        str(example.task),
        "--repo",
        str(example.source),
        "--results",
        str(work / "v"),
        "--format",
        "json",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "SSEBench's task model would refuse" not in done.stderr
    (task,) = json.loads(done.stdout)["tasks"]
    assert (task["verdict"], task["reference_flags"]) == ("ok", [])
    runs = {run["control"]: run for run in task["runs"]}
    assert runs["reference"]["guard"]["flags"] == []
