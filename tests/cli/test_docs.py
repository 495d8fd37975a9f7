"""The docs stay true: the config reference lists exactly the model's keys, the container
recipe names files that exist, and its entry point grades a task end to end."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ssegrade.internal.task import Files, Scripts, Task, TaskDescription
from tests.support.realtask import git

TOP = Path(__file__).resolve().parents[2]
DOCS = TOP / "docs"


def test_the_config_reference_lists_exactly_the_models_keys() -> None:
    text = (DOCS / "task-authors.md").read_text()
    documented = set(re.findall(r"^\| `([a-z_.]+)` \|", text, flags=re.MULTILINE))
    keys = {name for name in Task.model_fields if name not in ("scripts", "files")}
    keys.discard("task_description")
    for section, model in (
        ("scripts", Scripts),
        ("files", Files),
        ("task_description", TaskDescription),
    ):
        keys |= {f"{section}.{name}" for name in model.model_fields}
    assert documented == keys


def test_the_container_recipe_names_files_that_exist() -> None:
    lines = (DOCS / "container" / "Dockerfile").read_text().splitlines()
    instructions = [line for line in lines if line and not line[0].isspace() and line[0] != "#"]
    assert instructions[0].startswith("FROM python:3.11")
    copied: dict[str, list[str]] = {}
    for line in instructions:
        if line.startswith("COPY "):
            *sources, dest = line.split()[1:]
            for source in sources:
                assert (TOP / source).exists(), source
            copied[dest] = sources
    entry = json.loads(next(i for i in instructions if i.startswith("ENTRYPOINT "))[11:])
    script = TOP / copied[entry[0]][0]
    assert os.access(script, os.X_OK)
    assert subprocess.run(["bash", "-n", str(script)], check=False).returncode == 0


@pytest.mark.slow
def test_the_container_entry_point_grades_a_task(tmp_path: Path) -> None:
    task = tmp_path / "ssebench"
    source = tmp_path / "src"
    shutil.copytree(TOP / "examples" / "tlv" / "task", task)
    shutil.copytree(TOP / "examples" / "tlv" / "project", source)
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "initial")
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}",
        "SSE_BENCH_PATH": str(task),
        "SSE_SOURCE": str(source),
        "SSE_BASELINE": str(tmp_path / "baseline"),
        "SSE_RESULTS": str(tmp_path / "results"),
        "TIMEOUT": "300",
    }
    done = subprocess.run(
        [str(DOCS / "container" / "run-task.sh"), "git", "apply", str(task / "fix.diff")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "passed"
    runtime = json.loads((tmp_path / "results" / "result.json").read_bytes())["runtime_result"]
    assert runtime["agent_exit_code"] == 0
