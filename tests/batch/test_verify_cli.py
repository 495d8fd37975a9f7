"""`ssegrade verify` end to end: real tasks, real gradings, the console script.

The bundled examples must verify `ok`; broken variants of a small shell task must be caught,
each with its sentence.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from pydantic import TypeAdapter

from interpreters.real.resultsfolder.writer import ResultsWriter
from ssegrade.internal.effects import CheckFinished, CheckRecord
from tests.support.realtask import FIX, shell_task, ssegrade

pytestmark = pytest.mark.slow

RECORD = TypeAdapter(CheckRecord)

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def verify(*args: str, env: dict[str, str] | None = None) -> tuple[int, dict[str, Any], str]:
    with tempfile.TemporaryDirectory(prefix="verify-results-") as kept:
        extra = () if "--results" in args else ("--results", os.path.join(kept, "r"))
        done = ssegrade("verify", "--format", "json", *args, *extra, env=env, timeout=600)
    doc = json.loads(done.stdout) if done.stdout.strip() else {}
    return done.returncode, doc, done.stderr


def only(doc: dict[str, Any]) -> dict[str, Any]:
    tasks = doc["tasks"]
    assert len(tasks) == 1
    task: dict[str, Any] = tasks[0]
    return task


def test_the_bundled_tlv_example_is_ok(tmp_path: Path) -> None:
    code, doc, err = verify(
        str(EXAMPLES / "tlv" / "task"),
        "--repo",
        str(EXAMPLES / "tlv" / "project"),
        "--results",
        str(tmp_path / "r"),
    )
    assert code == 0, err
    task = only(doc)
    assert "SSEBench" not in err  # its config is valid for SSEBench's own task model
    assert (task["task"], task["verdict"], task["problems"], task["flaky"]) == (
        "tlv-001",
        "ok",
        [],
        [],
    )
    assert task["folder"] == str(EXAMPLES / "tlv" / "task")
    runs = {(r["control"], r["n"]): r for r in task["runs"]}
    assert sorted(runs) == [("empty", 1), ("reference", 1)]
    assert runs["empty", 1]["status"] == "failed"
    assert runs["empty", 1]["result"]["pov_passed"] == 0
    assert runs["reference", 1]["result"]["status"] == "passed"
    for control in ("empty", "reference"):
        assert (tmp_path / "r" / "tlv-001" / control / "1" / "result.json").is_file()


@pytest.fixture
def kvconf_toolchain() -> Iterator[dict[str, str]]:
    """The environment the kvconf example's image would set: its toolchain, readable by the
    runner account."""
    home = Path(tempfile.mkdtemp(prefix="kvc-", dir="/tmp"))
    try:
        home.chmod(0o755)
        shutil.copytree(EXAMPLES / "kvconf" / "toolchain", home / "toolchain")
        yield {"KVC_HOME": str(home / "toolchain")}
    finally:
        shutil.rmtree(home)


def test_the_bundled_kvconf_example_is_ok(tmp_path: Path, kvconf_toolchain: dict[str, str]) -> None:
    code, doc, err = verify(
        str(EXAMPLES / "kvconf" / "task"),
        "--repo",
        str(EXAMPLES / "kvconf" / "project"),
        "--results",
        str(tmp_path / "r"),
        env=kvconf_toolchain,
    )
    task = only(doc)
    assert (task["verdict"], task["problems"]) == ("ok", []), err
    assert code == 0


def test_a_config_ssebench_would_refuse_is_one_warning_line(tmp_path: Path) -> None:
    """Graded all the same; one line says why SSEBench's own task model refuses the config
    (no project URL, a language it has no image for, a relative source, keys it does not
    know)."""
    made = shell_task(tmp_path / "t")
    code, doc, err = verify(str(made.task), "--repo", str(made.source))
    assert (code, only(doc)["verdict"]) == (0, "ok"), err
    warnings = [line for line in err.splitlines() if "SSEBench's task model" in line]
    assert warnings == [
        f"warning: {made.task}/config.yaml: SSEBench's task model would refuse it: "
        "no repository; language 'sh' is not one of c, go, rust; no source; "
        "no task description; unknown keys: informative_extra"
    ]


def test_the_table_names_each_task_and_its_problems(tmp_path: Path) -> None:
    good = shell_task(tmp_path / "good")
    bad = shell_task(tmp_path / "bad")
    bad.script("run.sh", '#!/bin/sh\ncase "$1" in *poc2*) exit 1;; esac\ngrep -q fixed out.txt\n')
    config = yaml.safe_load((bad.task / "config.yaml").read_text())
    config["id"] = "shell-002"
    (bad.task / "config.yaml").write_text(yaml.safe_dump(config))
    done = ssegrade(
        "verify",
        str(good.task),
        str(bad.task),
        "--repo",
        str(good.source),
        "--results",
        str(tmp_path / "r"),
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    log = tmp_path / "r" / "shell-002" / "reference" / "1" / "logs" / "08-poc-2.log"
    assert done.stdout.splitlines() == [
        "task       verdict",
        "shell-001  ok",
        "shell-002  broken",
        "           - PoC pocs/poc2.bin still triggers with the reference patch",
        f"             log (reference run 1, poc): {log}",
        "             | exit code: 1",
    ]
    assert log.is_file()
    assert f"results kept in {tmp_path / 'r'}" in done.stderr


def test_the_flags_the_reference_patch_raises_are_printed_not_held_against_it(
    tmp_path: Path,
) -> None:
    """A real fix may touch the project's tests: `verify` says so, and the task is still ok."""
    touching = FIX + (
        "diff --git a/tests/exists.sh b/tests/exists.sh\n--- a/tests/exists.sh\n"
        "+++ b/tests/exists.sh\n@@ -1 +1,2 @@\n test -f lib.sh\n+test -f lib.sh\n"
    )
    made = shell_task(tmp_path / "t", patch=touching)
    repo = ("--repo", str(made.source))
    done = ssegrade("verify", str(made.task), *repo, "--results", str(tmp_path / "r"), timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [
        "task       verdict",
        "shell-001  ok",
        "           - the reference patch raises the guard's tests flag: the patch touches the "
        "project's tests [tests/exists.sh]",
    ]
    code, doc, _ = verify(str(made.task), *repo)
    assert code == 0
    (task,) = doc["tasks"]
    assert [(f["kind"], f["paths"]) for f in task["reference_flags"]] == [
        ("tests", ["tests/exists.sh"])
    ]


@pytest.mark.parametrize(
    ("change", "sentence"),
    [
        (
            {"run.sh": '#!/bin/sh\ncase "$1" in *poc2*) exit 1;; esac\ngrep -q fixed out.txt\n'},
            "PoC pocs/poc2.bin still triggers with the reference patch",
        ),
        (
            {"run.sh": '#!/bin/sh\ncase "$1" in *poc1*) exit 0;; esac\ngrep -q fixed out.txt\n'},
            "PoC pocs/poc1.bin does not trigger on the unfixed project",
        ),
        (
            {"test.sh": "#!/bin/sh\ngrep -q fixed lib.sh\n"},
            "the functional tests fail on the unfixed project",
        ),
        ({"fix.diff": FIX.replace("-VALUE=bug", "-VALUE=other")}, "reference patch does not apply"),
    ],
)
def test_a_broken_variant_is_caught_with_its_sentence(
    tmp_path: Path, change: dict[str, str], sentence: str
) -> None:
    made = shell_task(tmp_path)
    for name, body in change.items():
        if name.endswith(".sh"):
            made.script(name, body)
        else:
            (made.task / name).write_text(body)
    code, doc, err = verify(str(made.task), "--repo", str(made.source))
    assert code == 1, err
    task = only(doc)
    assert (task["verdict"], task["problems"], task["flaky"]) == ("broken", [sentence], [])


def test_a_flaky_test_script_is_flaky_with_its_counts(tmp_path: Path) -> None:
    state = Path(tempfile.mkdtemp(prefix="flaky-", dir="/tmp"))
    try:
        state.chmod(0o777)
        made = shell_task(tmp_path)
        # The functional tests fail every other time they run (the intent tests run as usual);
        # the count lives in a folder named in the environment, which scripts share only in
        # weak containment (in full, each run writes there for itself alone).
        made.script(
            "test.sh",
            "#!/bin/sh\n"
            "if [ -e tests/intent.sh ]; then sh tests/intent.sh; exit; fi\n"
            'n=$(cat "$FLAKY_STATE/count" 2>/dev/null || echo 0)\n'
            'echo $((n + 1)) > "$FLAKY_STATE/count"\n'
            "[ $((n % 2)) -eq 0 ]\n",
        )
        code, doc, err = verify(
            str(made.task),
            "--repo",
            str(made.source),
            "--repeat",
            "2",
            "--workers",
            "1",
            "--script-env",
            "FLAKY_STATE",
            "--containment",
            "weak",
            env={"FLAKY_STATE": str(state)},
        )
        assert code == 1, err
        task = only(doc)
        assert task["verdict"] == "flaky"
        assert task["problems"] == []
        assert task["flaky"] == [
            "function_test passed 1 of 2 on the unfixed project",
            "function_test passed 1 of 2 with the reference patch",
        ]
        assert len(task["runs"]) == 4
        # Each flaky check names a run where it failed, with its log and its first lines.
        assert [(e["about"], e["check"]) for e in task["evidence"]] == [
            (line, "function_test") for line in task["flaky"]
        ]
        for evidence in task["evidence"]:
            folder = f"/shell-001/{evidence['control']}/{evidence['n']}/logs/"
            assert folder in evidence["log"]
            assert evidence["log"].endswith("-function_test.log")
            assert evidence["head"][0].startswith("exit code: ")
            assert evidence["head"][0] != "exit code: 0"
    finally:
        shutil.rmtree(state)


def test_a_task_without_reference_patch_is_broken_and_the_others_are_verified(
    tmp_path: Path,
) -> None:
    good = shell_task(tmp_path / "good")
    lacking = shell_task(tmp_path / "lacking", patch=None)
    config = yaml.safe_load((lacking.task / "config.yaml").read_text())
    config["id"] = "shell-009"
    (lacking.task / "config.yaml").write_text(yaml.safe_dump(config))
    code, doc, err = verify(str(good.task), str(lacking.task), "--repo", str(good.source))
    assert code == 1, err
    verdicts = {t["task"]: (t["verdict"], t["problems"]) for t in doc["tasks"]}
    assert verdicts == {
        "shell-001": ("ok", []),
        "shell-009": ("broken", ["the task has no reference patch"]),
    }
    lacking_runs = [r["control"] for r in doc["tasks"][1]["runs"]]
    assert lacking_runs == ["empty"]


def test_bad_input_is_one_line_exit_2_and_leaves_no_folder(tmp_path: Path) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    given = tmp_path / "results"
    for extra in ((), ("--results", str(given))):
        done = ssegrade("verify", str(tmp_path / "nowhere"), *extra, env={"TMPDIR": str(scratch)})
        assert done.returncode == 2
        assert done.stderr.splitlines() == [
            f"ssegrade: error: task folder not found: {tmp_path / 'nowhere'}"
        ]
        assert done.stdout == ""
        assert list(scratch.iterdir()) == []
        assert not given.exists()


def test_results_json_goes_to_a_file_with_o(tmp_path: Path) -> None:
    made = shell_task(tmp_path)
    out = tmp_path / "report.json"
    done = ssegrade(
        "verify", str(made.task), "--repo", str(made.source), "--format", "json", "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert json.loads(out.read_text())["tasks"][0]["verdict"] == "ok"
    kept = done.stderr.split("results kept in ")[1].split()[0]
    assert os.path.isdir(kept)
    shutil.rmtree(kept)


records = st.builds(
    CheckRecord,
    name=st.sampled_from(["prepare", "build", "poc", "function_test", "intent_test"]),
    poc=st.none() | st.text(max_size=20),
    exit_code=st.integers(-1, 255),
    seconds=st.floats(0, 1e6),
    killed=st.booleans(),
    log_file=st.none() | st.text(max_size=20),
    passed=st.booleans(),
    left_out=st.lists(st.text(max_size=10), max_size=3).map(tuple),
)


@given(st.lists(records, max_size=4))
def test_check_records_read_back_as_the_evaluator_wrote_them(written: list[CheckRecord]) -> None:
    """Property: `checks.jsonl` reads with the model the evaluator writes it with (the
    records a grading answers in its `Graded`), so every record comes back as it was."""
    with tempfile.TemporaryDirectory() as folder:
        writer = ResultsWriter(None, Path(folder))
        for record in written:
            writer(CheckFinished(record))
        with (Path(folder) / "checks.jsonl").open("a") as out:
            out.write("not json\n")
        lines = (Path(folder) / "checks.jsonl").read_bytes().splitlines()[:-1]
        assert tuple(RECORD.validate_json(line) for line in lines) == tuple(written)
