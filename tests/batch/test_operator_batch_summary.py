"""An operator's reading of a results folder's `batch.json`, as `ssegrade report DIR --batch`
prints it: the command it offers grades what is left on the engine that graded it (a batch of
image jobs resumed on local workers would refuse every line), and its times read whole at 80
columns (a real batch's times carry microseconds)."""

from __future__ import annotations

import io
import json
import shlex
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from hypothesis import given
from hypothesis import strategies as st

from interpreters.batch import run_batch
from interpreters.cli.batch import batch as batch_command
from interpreters.cli.container_options import on_ray
from interpreters.report.batch import load_batch, print_batch
from ssegrade.batch import BatchCommand, JobsFile, batch_summary, ray_cluster
from tests.support.batchkit import Quiet, saying, verdict_grade
from tests.support.realtask import make_task

START = datetime(2026, 11, 30, 10, tzinfo=UTC)
Engine = Literal["local", "ray", "podman", "docker"]
ADDRESSES = (None, "127.0.0.1:6379", "ray://head:10001", "ops:s3cret@head:6379")


def _ran(engine: Engine, address: str | None, cluster: bool) -> str | None:
    """The Ray cluster a command with these options records (as `run_batch` does)."""
    ray = engine == "ray" or (engine in ("podman", "docker") and (cluster or bool(address)))
    return ray_cluster(address) if ray else None


@given(
    st.sampled_from(["local", "ray", "podman", "docker"]),
    st.sampled_from(ADDRESSES),
    st.booleans(),
)
def test_the_command_that_grades_what_is_left_runs_on_the_engine_that_graded(
    engine: Engine, address: str | None, cluster: bool
) -> None:
    """Property: the resume command, parsed by `ssegrade batch` itself, asks for the same
    engine, on Ray exactly when Ray ran the command, at the address recorded."""
    if engine == "local":
        address, cluster = None, False
    ray = _ran(engine, address, cluster)
    command = BatchCommand(
        ssegrade="1.0", engine=engine, ray=ray, workers=2, containment="full",
        jobs="my jobs.jsonl", started_at=START, ended_at=START, interrupted=True,
    )  # fmt: skip
    jobs = JobsFile(path="my jobs.jsonl", sha256="0" * 64, count=1, runs=("t/m/a/r",))
    doc = batch_summary(
        previous=None, command=command, jobs=jobs, label="n", states=[], results="out dir"
    )
    (resume,) = doc.resume
    argv = shlex.split(resume)
    assert argv[:2] == ["ssegrade", "batch"]
    parsed = batch_command.make_context("batch", argv[2:], resilient_parsing=False).params
    assert (parsed["jobs"], parsed["results"]) == (Path("my jobs.jsonl"), Path("out dir"))
    assert parsed["engine"] == engine
    assert parsed["label"] == "n"
    if engine in ("podman", "docker"):
        runs_on_ray = on_ray(engine, parsed["cluster"], parsed["ray_address"])
        assert runs_on_ray == (ray is not None)
    if ray is not None and ray != "local":
        assert parsed["ray_address"] == ray  # as recorded: no credential
    else:
        assert parsed["ray_address"] is None


def test_the_resume_command_of_a_jobs_file_is_that_of_its_last_command() -> None:
    """Two jobs files graded by two commands on two engines: each file's command is its own."""
    first = BatchCommand(
        ssegrade="1.0", engine="podman", ray="head:6379", workers=2, containment="full",
        jobs="a.jsonl", started_at=START, ended_at=START, interrupted=True,
    )  # fmt: skip
    a = JobsFile(path="a.jsonl", sha256="0" * 64, count=1, runs=("t/m/a/r1",))
    doc = batch_summary(previous=None, command=first, jobs=a, label=None, states=[], results="o")
    second = first.model_copy(update={"engine": "local", "ray": None, "jobs": "b.jsonl"})
    b = JobsFile(path="b.jsonl", sha256="1" * 64, count=1, runs=("t/m/a/r2",))
    doc = batch_summary(previous=doc, command=second, jobs=b, label=None, states=[], results="o")
    assert doc.resume == (
        "ssegrade batch a.jsonl --results o --engine podman --ray-address head:6379",
        "ssegrade batch b.jsonl --results o",
    )


def test_a_real_batch_s_times_read_whole_at_80_columns(tmp_path: Path) -> None:
    make_task(tmp_path / "t")
    (tmp_path / "p.patch").write_text(saying("fixed"))
    line = {"task": "t/task", "patch": "p.patch", "repo": "t/source", "run_id": "r1"}
    (tmp_path / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    results = tmp_path / "results"
    run_batch(tmp_path / "jobs.jsonl", results, grade=verdict_grade, reporter=Quiet())
    summary, _ = load_batch(str(results))
    out = io.StringIO()
    print_batch(str(results), summary, out, width=80)
    lines = out.getvalue().splitlines()
    assert all(len(text) <= 80 for text in lines), lines
    when = [text for text in lines if text.startswith("  first started ")]
    start = summary.started_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    end = summary.ended_at.strftime("%Y-%m-%d %H:%M:%S UTC")
    assert when == [f"  first started {start}, last ended {end}"], lines


def test_each_error_run_of_the_folder_is_listed_with_its_kind(tmp_path: Path) -> None:
    """`report --batch` lists each `error` run with its first failure and its kind, as the
    counts give them by kind (a grader's exception, a patch that hangs)."""
    make_task(tmp_path / "t")
    for name, words in (("crash", "crash a"), ("hang", "hang b"), ("good", "fixed c")):
        (tmp_path / f"{name}.patch").write_text(saying(words))
    lines = [
        {"task": "t/task", "patch": f"{name}.patch", "repo": "t/source", "run_id": name}
        for name in ("crash", "hang", "good")
    ]
    (tmp_path / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    results = tmp_path / "results"
    run_batch(tmp_path / "jobs.jsonl", results, grade=verdict_grade, reporter=Quiet())
    summary, _ = load_batch(str(results))
    out = io.StringIO()
    print_batch(str(results), summary, out, width=80)
    text = out.getvalue()
    assert "error (1 grader, 1 timeout)" in " ".join(text.split()), text
    listed = text.split("Error (2):\n")[1].split("\n\n")[0].splitlines()
    assert listed[0].startswith("  shell-001/unknown/unknown/crash: ")
    assert listed[0].endswith(" [grader]")
    assert listed[-1].startswith("  shell-001/unknown/unknown/hang: Timeout")
    assert listed[-1].endswith(" [timeout]")


def test_the_command_that_grades_what_is_left_pastes_whole_into_a_shell(tmp_path: Path) -> None:
    """Printed at 80 columns, the resume command of a folder with long paths (and a space)
    is cut between its words, each cut ending in a backslash: the shell reads back the very
    command `batch.json` holds (cut anywhere else, a pasted line would run half of it)."""
    deep = tmp_path / ("a folder of jobs " + "x" * 30) / ("y" * 40)
    deep.mkdir(parents=True)
    make_task(deep / "t")
    (deep / "p.patch").write_text(saying("crash"))  # an error: resume grades it again
    line = {"task": "t/task", "patch": "p.patch", "repo": "t/source", "run_id": "r1"}
    (deep / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    results = deep / "results of the night"
    run_batch(deep / "jobs.jsonl", results, grade=verdict_grade, reporter=Quiet(), label="n 1")
    summary, _ = load_batch(str(results))
    (resume,) = summary.resume
    out = io.StringIO()
    print_batch(str(results), summary, out, width=80)
    printed = out.getvalue().split("To grade what is left:\n")[1].split("\n\n")[0]
    assert printed.count("\n") > 1  # cut
    script = "set -- " + printed.replace("ssegrade batch", "", 1) + '\nprintf "%s\\n" "$@"'
    words = subprocess.run(
        ["sh", "-c", script], capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert ["ssegrade", "batch", *words] == shlex.split(resume)


def test_the_command_that_grades_what_is_left_retries_what_the_batch_retried(
    tmp_path: Path,
) -> None:
    """A batch run with `--retry-kinds timeout --max-attempts 3` lists its timed-out run as
    left to grade: the command it offers must say so too, or it grades nothing of it."""
    make_task(tmp_path / "t")
    (tmp_path / "hang.patch").write_text(saying("hang a"))
    line = {"task": "t/task", "patch": "hang.patch", "repo": "t/source", "run_id": "hang"}
    (tmp_path / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    results = tmp_path / "results"
    run_batch(
        tmp_path / "jobs.jsonl", results, grade=verdict_grade, reporter=Quiet(),
        retry_kinds={"timeout"}, max_attempts=3,
    )  # fmt: skip
    summary, _ = load_batch(str(results))
    (resume,) = summary.resume
    parsed = batch_command.make_context("batch", shlex.split(resume)[2:]).params
    assert parsed["retry_kinds"] == frozenset({"timeout"})
    assert (parsed["max_attempts"], parsed["no_retry"]) == (3, False)
