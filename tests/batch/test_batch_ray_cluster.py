"""The Ray engine on a real two-node cluster started on this host (`tests.support.raycluster`): a
head with no CPU, so that every grading runs on the second node, whose temporary folder is
its own and, as root, which cannot even see the driver's results folder (an empty tmpfs in
its mount namespace). Each grading's run folder comes back to the driver through Ray, written
there as the local engine writes it; a worker killed with -9 loses only its own grading,
recorded as an `error`, which the next run grades again.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import stat
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interpreters import run_batch
from interpreters.real.files import remove_tree
from interpreters.real.runner import OWNER_VAR
from interpreters.real.runner.guardian import scratch_owner
from tests.support.batchkit import HANGING, Quiet
from tests.support.processes import live_with, unique
from tests.support.raycluster import Cluster, NodeSpec, ray_cluster
from tests.support.realtask import CLI, fix_to, make_task, write_jobs
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="Ray is not installed (pip install 'ssegrade[ray]')",
    ),
]

ROOT = os.geteuid() == 0
PATCHES = {"fixed": "fixed", "broken": "broken", "bug": "other", "slow": "slow"}
RUN = ("shell-001", "unknown", "unknown")


@pytest.fixture
def node_tmp() -> Iterator[Path]:
    """The second node's own temporary folder (where it grades), searchable by the runner."""
    folder = Path(tempfile.mkdtemp(prefix="ray-node-tmp-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def listing(run: Path) -> dict[str, int]:
    """Every entry of a run folder with its mode (the notes of a first grading aside)."""
    return {
        path.relative_to(run).as_posix(): stat.S_IMODE(path.lstat().st_mode)
        for path in run.rglob("*")
        if path.name != "notes.log"
    }


def documents(run: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    result = json.loads((run / "result.json").read_bytes())
    result["patch_result"].pop("error_log")  # quotes the scratch copy of each grading
    checks = [json.loads(line) for line in (run / "checks.jsonl").read_bytes().splitlines()]
    for record in checks:
        record.pop("seconds")
        log = record.get("log_file")
        if log is not None:  # the driver's own folder, in either engine
            assert Path(log).parent in (run, run / "logs"), log
            assert Path(log).is_file(), log
            record["log_file"] = Path(log).relative_to(run).as_posix()
    return result, checks


def hanging_worker(token: str, driver: subprocess.Popen[str]) -> int:
    """The pid of the Ray worker whose grading's build sleeps with `token` (named in the
    owner tag its scripts carry)."""

    def worker() -> int | None:
        for pid in live_with(token):
            with contextlib.suppress(OSError):
                for entry in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                    if entry.startswith(f"{OWNER_VAR}=".encode()):
                        return int(entry.split(b"=", 1)[1].decode().split("-")[1])
        assert driver.poll() is None, f"the batch ended first: {driver.communicate()[1]}"
        return None

    return wait_until(worker, "the slow job's build", 120, 0.01)


def transit_of(node_tmp: Path, worker: int) -> list[str]:
    """The run folders a Ray worker of the node grades into, in the node's own folder."""
    return [
        name
        for name in os.listdir(node_tmp)
        if name.startswith("ssegrade-transit-")
        and (scratch_owner(name) or "").split("-")[1:2] == [str(worker)]
    ]


def settled(node_tmp: Path, token: str) -> tuple[list[str], list[int]]:
    """What is left on the node within a few seconds: its scratch, the slow job's sleepers."""
    deadline = time.monotonic() + 10
    while True:
        left = (sorted(os.listdir(node_tmp)), live_with(token))
        if left == ([], []) or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


@pytest.fixture
def drivers() -> Iterator[list[subprocess.Popen[str]]]:
    """The batch processes a test starts; any still running at its end is killed."""
    started: list[subprocess.Popen[str]] = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def batch(
    started: list[subprocess.Popen[str]], cluster: Cluster, jobs: Path, results: Path, hang: int
) -> subprocess.Popen[str]:
    """`ssegrade batch` on the cluster, its slow job's build sleeping `hang` seconds."""
    args = ["batch", str(jobs), "--results", str(results), "--engine", "ray"]
    args += ["--ray-address", cluster.address, "--workers", "2", "--script-env", f"HANG={hang}"]
    proc = subprocess.Popen(
        [*CLI, *args],
        env={**os.environ, **cluster.env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    started.append(proc)
    return proc


def test_a_two_node_cluster_sends_each_run_folder_back_and_a_dead_worker_costs_one_job(
    tmp_path: Path, node_tmp: Path, drivers: list[subprocess.Popen[str]]
) -> None:
    token = unique()
    made = make_task(tmp_path / "t")
    made.script("build.sh", HANGING.replace("{t}", token))
    jobs = write_jobs(tmp_path, made, {name: fix_to(value) for name, value in PATCHES.items()})
    local = tmp_path / "local"
    done = run_batch(jobs, local, workers=2, reporter=Quiet())
    assert done.exit_code == 0, done.last_line
    driver = tmp_path / "driver"  # the driver's side alone: hidden from the second node
    results = driver / "results"
    head = NodeSpec(cpus=0, resources='{"head": 1}')
    second = NodeSpec(
        cpus=2,
        resources='{"second": 1}',
        env={"TMPDIR": str(node_tmp)},
        hidden=(driver,) if ROOT else (),
    )
    driver.mkdir()
    with ray_cluster(head, second) as cluster:
        node = cluster.nodes[1]
        if ROOT:  # the second node sees an empty folder where the driver writes
            assert os.listdir(f"/proc/{node.process.pid}/root{driver}") == []
        first = batch(drivers, cluster, jobs, results, hang=300)
        worker = hanging_worker(token, first)
        assert transit_of(node_tmp, worker)  # graded in the second node's own folder
        os.kill(worker, 9)
        _, err = first.communicate(timeout=120)
        assert first.returncode == 1, err
        assert err.splitlines()[-1].startswith("4 graded, 1 passed, 2 failed, 1 error, "), err
        assert settled(node_tmp, token) == ([], [])
        run = results.joinpath(*RUN)
        lost = json.loads((run / "slow" / "summary.json").read_bytes())
        assert lost["patch_result"]["status"] == "error"
        assert lost["patch_result"]["error_msg"].startswith("Exception: lost on its Ray node: ")
        assert lost["attempts"] == 1
        for name in ("fixed", "broken", "bug"):
            here, there = run / name, local.joinpath(*RUN, name)
            assert listing(here) == listing(there), name
            assert documents(here) == documents(there), name
            summary = json.loads((here / "summary.json").read_bytes())
            assert summary["digest"] == json.loads((there / "summary.json").read_bytes())["digest"]
        assert json.loads((results / "batch.json").read_bytes())["runs"]["error"] == [
            "/".join((*RUN, "slow"))
        ]
        again = batch(drivers, cluster, jobs, results, hang=0)
        _, err = again.communicate(timeout=120)
        assert again.returncode == 0, err
        assert err.splitlines()[-1].startswith("1 graded, 0 passed, 1 failed, 0 error, "), err
        retried = json.loads((run / "slow" / "summary.json").read_bytes())
        assert (retried["patch_result"]["status"], retried["attempts"]) == ("failed", 2)
        assert listing(run / "slow") == listing(local.joinpath(*RUN, "slow"))
        assert documents(run / "slow") == documents(local.joinpath(*RUN, "slow"))
        assert settled(node_tmp, token) == ([], [])
