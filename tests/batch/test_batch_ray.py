"""The Ray engine, for real on a local Ray started by each batch: the same jobs give the same
`result.json` as on the local engine; a second Ctrl-C kills the running gradings at once and
leaves nothing of them; a cluster address nothing answers at is one line."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from interpreters import run_batch
from interpreters.real.files import remove_tree
from tests.support.batchkit import HANGING, Quiet
from tests.support.processes import live_with, unique
from tests.support.raycluster import free_port
from tests.support.realtask import CLI, fix_to, make_task, ssegrade, write_jobs
from tests.support.waiting import wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        importlib.util.find_spec("ray") is None,
        reason="Ray is not installed (pip install 'ssegrade[ray]')",
    ),
]


def results_of(results: Path) -> dict[str, dict[str, Any]]:
    run = results / "shell-001" / "unknown" / "unknown"
    return {p.name: json.loads((p / "result.json").read_bytes()) for p in run.iterdir()}


def test_ray_and_local_engines_give_the_same_results(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    patches = {
        "fixed": fix_to("fixed"),
        "empty": "",
        "stale": fix_to("x").replace("bug", "old"),
        "broken": fix_to("broken"),
    }
    jobs = write_jobs(tmp_path, made, patches)
    local = run_batch(jobs, tmp_path / "local", workers=2, reporter=Quiet())
    ray = run_batch(jobs, tmp_path / "ray", workers=2, engine="ray", reporter=Quiet())
    assert (local.exit_code, ray.exit_code) == (0, 0)
    assert ray.last_line.startswith("4 graded, 1 passed, 3 failed, 0 error, 0 cached, ")
    on_local, on_ray = results_of(tmp_path / "local"), results_of(tmp_path / "ray")
    assert sorted(on_ray) == sorted(patches)
    # Identical documents where no log is quoted; elsewhere identical but for the log, which
    # quotes the scratch folder of each grading.
    for name in ("fixed", "stale"):
        assert on_ray[name] == on_local[name]
    for name in patches:
        on_ray[name]["patch_result"].pop("error_log")
        on_local[name]["patch_result"].pop("error_log")
        assert on_ray[name] == on_local[name]
    assert on_ray["broken"]["patch_result"]["error_msg"] == "Build failed"


def test_a_cluster_address_nothing_answers_is_one_line_at_once(tmp_path: Path) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(tmp_path, made, {"fixed": fix_to("fixed")})
    address = f"127.0.0.1:{free_port()}"  # Ray alone would try for minutes
    args = ["batch", str(jobs), "--results", str(tmp_path / "r"), "--engine", "ray"]
    done = ssegrade(*args, "--ray-address", address, timeout=60)
    assert done.returncode == 2
    assert done.stderr == f"ssegrade: error: no Ray cluster at {address}: Connection refused\n"
    assert not (tmp_path / "r").exists()


@pytest.fixture
def own_tmp() -> Iterator[Path]:
    """A temporary folder for one batch and the local Ray it starts (searchable by the
    runner, as the scratch of gradings must be)."""
    folder = Path(tempfile.mkdtemp(prefix="ray-int-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def test_a_second_ctrl_c_kills_the_ray_gradings_at_once_and_leaves_nothing(
    tmp_path: Path, own_tmp: Path
) -> None:
    token = unique()
    made = make_task(tmp_path / "t")
    made.script("build.sh", HANGING.replace("{t}", token))
    jobs = write_jobs(tmp_path, made, {"a": fix_to("slow"), "b": fix_to("slow") + "\n"})
    args = ["batch", str(jobs), "--results", str(tmp_path / "r"), "--engine", "ray"]
    proc = subprocess.Popen(
        [*CLI, *args, "--workers", "2", "--script-env", "HANG=300"],
        env={**os.environ, "TMPDIR": str(own_tmp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        def sleeping() -> bool:
            assert proc.poll() is None, proc.communicate()[1]
            return len(live_with(token)) >= 2

        wait_until(sleeping, "both builds to sleep", 120, 0.01)
        proc.send_signal(signal.SIGINT)
        assert proc.stderr is not None
        said: list[str] = []
        while not said or not said[-1].startswith("interrupted: waiting for 2 running"):
            said.append(proc.stderr.readline())
            assert said[-1], said  # the first is taken before the second is sent
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)  # not the 300 s the builds sleep
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130
    assert err.splitlines()[-1].endswith(
        "interrupted: 2 running gradings killed, folders removed, 0 jobs never started;"
        " the same command resumes"
    )
    run = tmp_path / "r" / "shell-001" / "unknown" / "unknown"
    assert os.listdir(run) == []

    def left() -> tuple[list[int], list[str]]:
        return live_with(token), sorted(n for n in os.listdir(own_tmp) if n != "ray")

    # the guardians of the killed Ray workers clean up
    wait_until(lambda: left() == ([], []), "the killed workers' leftovers to go", 10, 0.05, left)
