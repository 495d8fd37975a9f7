"""What the tests of `ssegrade batch --engine podman|docker` share, whichever engine runs the
containers: the engine seen through its command line (`Engine`: podman here, the private
dockerd in `tests/support/dockerkit.py`), a stand-in bundle that grades nothing and does what
its patch says, the batch of its hostile jobs, a batch whose one job sleeps (for kill -9 and
Ctrl-C), and the kvconf example graded on the host, to compare with.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from interpreters.batch.run import run_batch
from interpreters.engine.containers import ContainerSettings
from ssegrade.batch import BATCH_LABEL, EngineProgram
from tests.support import containerkit
from tests.support.containerkit import one_line_diff, unique_id
from tests.support.exampletasks import EXAMPLES, lay_out
from tests.support.realtask import CLI, ssegrade
from tests.support.waiting import wait_until


@dataclass(frozen=True)
class Engine:
    """A container engine as the tests drive it: its name, how to run one of its commands,
    what ssegrade's environment needs to reach it, and a podman image on it (under the same
    name and ID)."""

    name: EngineProgram
    run: Callable[..., subprocess.CompletedProcess[str]]
    env: dict[str, str]
    image: Callable[[str], str]

    def left(self, label: str) -> list[str]:
        """The containers still there that carry `label` (`NAME=VALUE`), running or not."""
        listed = self.run("ps", "--all", "--quiet", "--filter", f"label={label}")
        assert listed.returncode == 0, listed.stderr
        return listed.stdout.split()


PODMAN = Engine(
    "podman",
    containerkit.podman,
    {"CONTAINERS_CONF": str(containerkit.CONTAINERS_CONF)},
    lambda image: image,
)
"""Podman with the repository's settings."""

HOSTILE = """#!/bin/sh
# Stands in for ssegrade: does to the staging folder what its patch says.
out=/ssegrade-out/run
mkdir -p "$out/logs"
case "$(cat /ssegrade-in/patch.diff)" in
  *symlink*) ln -s /etc/shadow "$out/result.json" ;;
  *huge*) echo '{"patch_result": {"status": "failed"}}' > "$out/result.json"
          head -c 3000000 /dev/zero > "$out/logs/huge.log" ;;
  *sleep*) exec sleep 300 ;;
  *nap*) sleep 4; exit 3 ;;
  *) exit 3 ;;
esac
"""
"""A bundle's `ssegrade` that grades nothing: it does what its patch (`one_line_diff(word)`)
says."""


def hostile_bundle(into: Path) -> Path:
    """A stand-in bundle (`HOSTILE`) in the new folder `into/bundle`: its path."""
    bundle = into / "bundle"
    bundle.mkdir()
    (bundle / "ssegrade").write_text(HOSTILE)
    (bundle / "ssegrade").chmod(0o755)
    return bundle


def hostile_batch(engine: Engine, image: str, work: Path, bundle: Path) -> None:
    """A batch on `engine` (reached through this process's environment) of the stand-in
    bundle's jobs in `image` that write a link, write too much, exit without a grade and
    outlive their time: each run folder bounded and free of links, each an `infrastructure`
    error saying why, and no container of them left."""
    lines = []
    ids = {word: unique_id(word) for word in ("symlink", "huge", "nothing", "sleep")}
    for word, run_id in ids.items():
        (work / f"{word}.diff").write_text(one_line_diff(word))
        lines.append({"image": image, "patch": f"{word}.diff", "run_id": run_id})
    settings = ContainerSettings(engine.name, bundle, results_limit=1 << 20, grace=1)
    report = run_batch(lines, work / "r", base=work, containers=settings, engine=engine.name,
                       workers=4, retry=False, timeout=3)  # fmt: skip
    said = {}
    for outcome in report.jobs:
        said[outcome.folder.name] = json.loads((outcome.folder / "result.json").read_text())
        assert [p.name for p in outcome.folder.rglob("*") if p.is_symlink()] == []
        sizes = sum(p.stat().st_size for p in outcome.folder.rglob("*") if p.is_file())
        assert sizes <= 1 << 20  # the staging folder's bound, and the ingest's
    for word, why in (
        ("symlink", "no result.json"),
        ("nothing", "exited 3 without a grade"),
        ("sleep", "ran past its time limit (4 s)"),
    ):
        result = said[ids[word]]
        assert result["patch_result"]["status"] == "error"
        assert result["runtime_result"]["error_kind"] == "infrastructure"
        assert why in result["patch_result"]["error_msg"]
    for run_id in ids.values():
        assert engine.left(f"ssegrade.run={run_id}") == []


@dataclass(frozen=True)
class Sleeping:
    """A running batch whose one job sleeps: its driver, the job's container, the batch's
    name (its containers' label) and the batch's staging folder."""

    driver: subprocess.Popen[bytes]
    container: str
    batch: str
    staging: Path


@contextmanager
def sleeping_batch(
    engine: Engine,
    image: str,
    work: Path,
    bundle: Path,
    *more: str,
    env: dict[str, str] | None = None,
    tmp: Path | None = None,
) -> Iterator[Sleeping]:
    """Start `ssegrade batch` (its options `more` added, `env` in its environment) on `engine`
    with one job in `image` that sleeps (`bundle` is `hostile_bundle`'s); once its container
    runs, the batch (its staging folder in `tmp`, the driver's temporary folder by default).
    The driver is killed when the block ends, if it still runs."""
    (work / "sleep.diff").write_text(one_line_diff("sleep"))
    run_id = unique_id("sleep")
    line = {"image": image, "patch": "sleep.diff", "run_id": run_id}
    (work / "jobs.jsonl").write_text(json.dumps(line) + "\n")
    argv = [*CLI, "batch", str(work / "jobs.jsonl"), "--results", str(work / "r"),
            "--engine", engine.name, "--bundle", str(bundle), *more]  # fmt: skip
    quiet = subprocess.DEVNULL
    environment = {**os.environ, **engine.env, **(env or {})}
    driver = subprocess.Popen(argv, env=environment, stdout=quiet, stderr=quiet)
    try:
        label = f"ssegrade.run={run_id}"
        wait_until(lambda: engine.left(label), "the job's container", 60, 0.2)
        (container,) = engine.left(label)
        labels = engine.run("inspect", "--format", "{{json .Config.Labels}}", container)
        batch = json.loads(labels.stdout)[BATCH_LABEL]
        where = tmp or Path(tempfile.gettempdir())
        (staging,) = where.glob(f"ssegrade-containers-{batch}-*")
        yield Sleeping(driver, container, batch, staging)
    finally:
        if driver.poll() is None:
            driver.kill()
        driver.wait()


def gone_after_kill_9(engine: Engine, running: Sleeping, seconds: float = 30) -> None:
    """Kill -9 the driver of `running`: its reaper removes the batch's containers and staging
    folder within `seconds`."""
    os.kill(running.driver.pid, signal.SIGKILL)
    running.driver.wait()
    label = f"{BATCH_LABEL}={running.batch}"
    wait_until(
        lambda: not engine.left(label) and not running.staging.exists(),
        "the batch's containers and staging folder to go",
        seconds,
        0.2,
    )


def kvconf_on_host(work: Path, runs: dict[str, str], results: Path) -> str:
    """`ssegrade batch` on the host of the kvconf example laid out in `work`, each patch
    `work/<name>.diff` graded as the run `runs[name]`, into `results`; the task folder, which
    the host's results name where a container's name `/ssebench`."""
    example = lay_out(work / "host", "kvconf", "diffs/patch.diff", baseline=False)
    toolchain = work / "toolchain"
    shutil.copytree(EXAMPLES / "kvconf" / "toolchain", toolchain)
    host = [{"task": str(example.task), "patch": f"{name}.diff", "repo": str(example.source),
             "run_id": run_id} for name, run_id in runs.items()]  # fmt: skip
    (work / "host.jsonl").write_text("".join(json.dumps(line) + "\n" for line in host))
    args = ["batch", str(work / "host.jsonl"), "--results", str(results), "--workers", "2"]
    done = ssegrade(*args, "--script-env", f"KVC_HOME={toolchain}", timeout=300)
    assert done.returncode == 0, done.stderr
    return str(example.task)
