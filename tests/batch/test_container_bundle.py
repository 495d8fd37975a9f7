"""The ssegrade bundle: ssegrade in an image without Python, mounted read-only, and nothing of it
in the environment the task's scripts see."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.engine import bundle
from tests.support import containerkit
from tests.support.realtask import CLI, FIX, make_task, ssegrade

pytestmark = pytest.mark.slow

ENV_BUILD = """#!/bin/sh
# Prints the environment a script sees, then builds as the shell task does.
env
if command -v python3; then echo "python3 is in the image" >&2; exit 9; fi
. ./lib.sh
echo "$VALUE" > out.txt
"""


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner account can enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-bundle-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def test_the_bundle_is_read_only_and_ignores_the_callers_python_settings(work: Path) -> None:
    made = containerkit.ssegrade_bundle()
    writable = [
        path
        for path in [made, *made.rglob("*")]
        if not path.is_symlink() and path.stat().st_mode & 0o222
    ]
    assert writable == []
    # The attack: ssegrade started in the agent's tree (a task image's working folder), or
    # with a PYTHONPATH, where a package shadows ssegrade's own.
    shadow = work / "interpreters"
    shadow.mkdir()
    (shadow / "__init__.py").write_text("raise SystemExit('hijacked')\n")
    hostile = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(work), "PYTHONSTARTUP": "/dev/null"}
    done = subprocess.run(
        [str(made / "ssegrade"), "--version"],
        cwd=work,
        env=hostile,
        capture_output=True,
        text=True,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout.startswith("ssegrade, version ")


@pytest.mark.container
def test_the_bundle_runs_ssegrade_in_an_image_without_python() -> None:
    containerkit.require_engine()
    script = (
        "! command -v python3 && ln -s /opt/ssegrade/ssegrade /usr/local/bin && ssegrade --version"
    )
    done = containerkit.run(containerkit.BASE, ["sh", "-c", script])
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ssegrade, version ")


@pytest.mark.container
def test_a_task_is_graded_in_an_image_without_python_its_scripts_seeing_nothing_of_the_bundle(
    work: Path,
) -> None:
    containerkit.require_engine()
    made = make_task(work / "shell")
    made.script("build.sh", ENV_BUILD)
    (work / "in").mkdir()
    (work / "in" / "fix.diff").write_text(FIX)
    (work / "out").mkdir()
    grade = [f"{containerkit.BUNDLE_AT}/ssegrade", "evaluate", "--task", "/ssebench"]
    grade += ["--patch", "/in/fix.diff", "--repo", "/src/shell", "--results", "/out/run"]
    mounts = [f"{made.task}:/ssebench", f"{made.source}:/src/shell:ro", f"{work / 'in'}:/in:ro"]
    options = [*(f"-v={mount}" for mount in mounts), "-v", f"{work / 'out'}:/out"]
    done = containerkit.run(
        containerkit.BASE,
        [*grade, "--containment", "weak"],
        options=options,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((work / "out" / "run" / "result.json").read_bytes())["patch_result"]
    assert result["status"] == "passed", result["error_log"]
    logs = work / "out" / "run" / "logs"
    seen = "".join(path.read_text() for path in sorted(logs.glob("*-build.log")))
    assert "PATH=" in seen
    for leak in (containerkit.BUNDLE_AT, "LD_LIBRARY_PATH", "PYTHON"):
        assert leak not in seen


def test_two_builders_at_once_make_one_bundle(work: Path) -> None:
    # The xdist workers' case: both wait on one lock, the second finds the first's bundle.
    containerkit.ssegrade_bundle()  # skips where no bundle can be built
    into = work / "bundles"
    command = [*CLI, "bundle", "--into", str(into)]
    builders = [
        subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for _ in range(2)
    ]
    said = [builder.communicate(timeout=600) for builder in builders]
    assert [builder.returncode for builder in builders] == [0, 0], said
    made = {out.strip() for out, _ in said}
    assert made == {str(into / bundle.bundle_name())}
    assert sorted(path.name for path in into.iterdir()) == [".lock", bundle.bundle_name()]
    ran = subprocess.run(
        [f"{made.pop()}/ssegrade", "--version"], capture_output=True, text=True, check=False
    )
    assert ran.stdout.startswith("ssegrade, version ")


@pytest.mark.parametrize("where", ["file", "unwritable"])
def test_a_bundle_that_cannot_be_made_is_one_error_line(work: Path, where: str) -> None:
    into = work / "a-file"
    into.write_text("")
    if where == "unwritable":
        into = into / "below"
    done = ssegrade("bundle", "--into", str(into))
    assert done.returncode in (1, 2), done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("ssegrade: error: ")


def test_the_bundle_s_name_is_the_environment_s_whatever_the_path_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test worker, or a PYTHONPATH, may put another distribution on the path: the bundle
    # holds the environment's packages, so its name must not move (two builders named the same
    # bundle, the test's worker another).
    before = bundle.bundle_name()
    info = tmp_path / "zz_bundle_test_extra-0.0.1.dist-info"
    info.mkdir()
    metadata = "Metadata-Version: 2.1\nName: zz-bundle-test-extra\nVersion: 0.0.1\n"
    (info / "METADATA").write_text(metadata)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert bundle.bundle_name() == before
