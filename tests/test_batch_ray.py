"""The Ray engine, for real on a local Ray (one per module): the same jobs give the same
`result.json` as on the local engine."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from interpreters import run_batch
from tests.raycluster import free_port
from tests.realtask import make_task, ssegrade
from tests.test_batch_cli import fix_to, write_jobs
from tests.test_batch_run import Quiet

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
