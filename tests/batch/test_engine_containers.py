"""`ssegrade batch --engine podman`: image jobs graded in fresh containers of their images, as
the host grades them, and nothing of the batch left afterwards, also after kill -9 of the
driver; a container that writes hostile things into its staging folder gets no grade of them.

The images are built once (module scope, cached by content: `tests/support/containerkit.py`); the
hostile containers run a stand-in bundle (a shell script) instead of ssegrade, so they cost
no grading.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.batch.run import run_batch
from interpreters.engine.containers import ContainerSettings
from ssegrade.batch import BATCH_LABEL
from tests.support import containerkit, enginekit
from tests.support.containerkit import (
    check_rows,
    left_with,
    one_line_diff,
    patch_result_of,
    unique_id,
)
from tests.support.enginekit import PODMAN, sleeping_batch
from tests.support.exampletasks import EXAMPLES
from tests.support.realtask import CLI, FIX, make_task, ssegrade
from tests.support.waiting import wait_until

pytestmark = [pytest.mark.container, pytest.mark.slow]

SHELL_IMAGE = """FROM {base}
COPY task /ssebench
COPY source /src/shell
RUN git -C /src/shell init -q -b main && git -C /src/shell add -A \\
 && git -C /src/shell -c user.name=t -c user.email=t@example.invalid commit -q -m buggy \\
 && useradd --system --no-create-home --shell /usr/sbin/nologin sse-runner
ENV SSE_REPO_PATH=/src/shell
"""
"""A python-less case image: the shell task of `tests.support.realtask`, its repo named by the
image's environment as SSEBench's images name theirs."""


def _env() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}


@pytest.fixture(scope="module")
def kvconf() -> str:
    containerkit.require_engine()
    return containerkit.task_image("kvconf")


@pytest.fixture
def work() -> Iterator[Path]:
    with containerkit.shared_folder("ssegrade-engine-") as folder:
        yield folder


def test_a_batch_in_containers_grades_as_the_local_engine(kvconf: str, work: Path) -> None:
    # Two jobs, two containers at once; then the same jobs on the host's engine.
    fix = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_bytes()
    (work / "fix.diff").write_bytes(fix)
    (work / "empty.diff").write_bytes(b"")
    ids = {"fix": unique_id("fix"), "empty": unique_id("empty")}
    lines = [{"image": kvconf, "patch": f"{name}.diff", "run_id": ids[name]} for name in ids]
    (work / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    bundle = str(containerkit.ssegrade_bundle())
    engine = ["--engine", "podman", "--bundle", bundle, "--workers", "2"]
    conf = {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)}
    args = ["batch", str(work / "jobs.jsonl"), "--results", str(work / "c"), *engine]
    done = ssegrade(*args, env=conf, timeout=300)
    assert done.returncode == 0, done.stderr
    # Two containers at once: the batch took less than its two gradings one after the other.
    each = [float(s) for s in re.findall(r"\((\d+\.\d) s\)", done.stderr)]
    (whole,) = re.findall(r" in (\d+\.\d) s$", done.stderr.strip())
    assert len(each) == 2
    assert float(whole) < sum(each), done.stderr
    for run_id in ids.values():
        assert left_with(f"ssegrade.run={run_id}") == []
    task = enginekit.kvconf_on_host(work, ids, work / "h")
    for name, verdict in (("fix", "passed"), ("empty", "failed")):
        (inside,) = (work / "c").glob(f"*/unknown/unknown/{ids[name]}")
        (outside,) = (work / "h").glob(f"*/unknown/unknown/{ids[name]}")
        container = patch_result_of(inside)
        assert container["status"] == verdict, container
        assert container == patch_result_of(outside, task)
        assert check_rows(inside) == check_rows(outside, task)
        summary = json.loads((inside / "summary.json").read_text())
        assert summary["containment"] == "container"
        # The guard's report comes back with the container's run folder, as the host's.
        host_summary = json.loads((outside / "summary.json").read_text())
        assert host_summary.get("guard") is not None
        assert summary.get("guard") == host_summary["guard"]
        for record in (inside / "checks.jsonl").read_text().splitlines():
            assert json.loads(record)["log_file"].startswith(f"{inside}/")


@pytest.fixture(scope="module")
def shell_image() -> str:
    """The python-less case image of the shell task (built once)."""
    containerkit.require_engine()
    with tempfile.TemporaryDirectory(prefix="ssegrade-image-") as scratch:
        context = Path(scratch)
        made = make_task(context / "made")
        shutil.copytree(made.task, context / "task")
        shutil.copytree(made.source, context / "source", ignore=shutil.ignore_patterns(".git"))
        shutil.rmtree(context / "made")
        (context / "Containerfile").write_text(SHELL_IMAGE.format(base=containerkit.BASE))
        digest = containerkit._digest(context)
        image = f"localhost/ssegrade-test-shell:{digest}"
        with containerkit._lock("images.lock"):
            if containerkit.podman("image", "exists", image).returncode != 0:
                built = containerkit.podman(
                    "build", "--network", "none", "-q", "-t", image, scratch
                )
                assert built.returncode == 0, built.stderr
    return image


def test_the_bundle_grades_in_an_image_without_python(
    shell_image: str, work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (work / "fix.diff").write_text(FIX)
    assert containerkit.podman("run", "--rm", "--entrypoint", "sh", shell_image, "-c",
                               "! command -v python3").returncode == 0  # fmt: skip
    settings = ContainerSettings("podman", containerkit.ssegrade_bundle())
    monkeypatch.setenv("CONTAINERS_CONF", str(containerkit.CONTAINERS_CONF))
    report = run_batch(
        [{"image": shell_image, "patch": "fix.diff"}], work / "r", base=work, containers=settings,
        engine="podman",
    )  # fmt: skip
    (outcome,) = report.jobs
    summary = json.loads((outcome.folder / "summary.json").read_text())
    assert summary["patch_result"]["status"] == "passed", summary["patch_result"]
    assert report.exit_code == 0


@pytest.fixture
def hostile_bundle(work: Path) -> Path:
    return enginekit.hostile_bundle(work)


def test_hostile_staging_is_refused_bounded_or_an_infrastructure_error(
    kvconf: str, work: Path, hostile_bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CONTAINERS_CONF", str(containerkit.CONTAINERS_CONF))
    enginekit.hostile_batch(PODMAN, kvconf, work, hostile_bundle)


def test_nothing_of_the_batch_stays_after_kill_9_of_the_driver(
    kvconf: str, work: Path, hostile_bundle: Path
) -> None:
    with sleeping_batch(PODMAN, kvconf, work, hostile_bundle) as running:
        enginekit.gone_after_kill_9(PODMAN, running)


def test_images_built_by_the_batch_are_built_once_and_removed_past_the_budget(
    kvconf: str, work: Path, hostile_bundle: Path
) -> None:
    # Jobs come grouped by image: once the second image's jobs start, the first one's image
    # is removed (a budget of one byte keeps none but the one in use); at the end, none.
    images, lines = [], []
    for word in ("first", "second"):
        (work / word).mkdir()
        (work / word / "Dockerfile").write_text(f"FROM {kvconf}\nLABEL ssegrade.test={word}\n")
        images.append(f"localhost/ssegrade-test-built:{word}-{uuid.uuid4().hex[:12]}")
        for n in range(2):
            (work / f"{word}{n}.diff").write_text(one_line_diff(f"nap-{word}{n}"))
            run_id = unique_id(f"{word}{n}")
            lines.append({"image": images[-1], "build": word, "patch": f"{word}{n}.diff",
                          "run_id": run_id})  # fmt: skip
    (work / "jobs.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    argv = [*CLI, "batch", str(work / "jobs.jsonl"), "--results", str(work / "r"),
            "--engine", "podman", "--bundle", str(hostile_bundle), "--workers", "1",
            "--image-budget", "1", "--no-retry"]  # fmt: skip
    quiet = subprocess.DEVNULL
    driver = subprocess.Popen(argv, env=_env(), stdout=quiet, stderr=quiet)
    try:
        firsts = {lines[0]["run_id"]: images, lines[2]["run_id"]: images[::-1]}
        started = wait_until(
            lambda: [run for run in firsts if left_with(f"ssegrade.run={run}")],
            "a job to start",
            120,
            0.2,
        )
        # whichever image's jobs run first, its image is gone once the other's start
        ran, then = firsts[started[0]]
        other = next(run for run in firsts if run != started[0])
        wait_until(
            lambda: left_with(f"ssegrade.run={other}"),
            "the other image's first job",
            120,
            0.2,
        )
        assert containerkit.podman("image", "exists", ran).returncode == 1
        assert containerkit.podman("image", "exists", then).returncode == 0
        assert driver.wait(120) == 1  # the stand-in grades nothing: every job an error
        for image in images:
            assert containerkit.podman("image", "exists", image).returncode == 1
        assert containerkit.podman("image", "exists", kvconf).returncode == 0
        summaries = list((work / "r").rglob("summary.json"))
        assert len(summaries) == 4
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait()
        for image in images:
            containerkit.podman("image", "rm", "--force", image)


def test_a_second_ctrl_c_removes_the_running_containers(
    kvconf: str, work: Path, hostile_bundle: Path
) -> None:
    with sleeping_batch(PODMAN, kvconf, work, hostile_bundle) as running:
        running.driver.send_signal(signal.SIGINT)
        time.sleep(1)
        # the first waits for it
        assert left_with(f"{BATCH_LABEL}={running.batch}") == [running.container]
        running.driver.send_signal(signal.SIGINT)
        assert running.driver.wait(60) == 130
        assert left_with(f"{BATCH_LABEL}={running.batch}") == []
        assert not running.staging.exists()
        assert list((work / "r").rglob("summary.json")) == []
