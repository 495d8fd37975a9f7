"""The core embeds alone: `pip install ssegrade` with no extra, in a fresh virtual environment,
brings pydantic, returns, PyYAML and sh, and nothing of the command line, the daemon, the report
or hypothesis; `decide` and the grading program run there against the fake world, and the
console script names the extra it misses in one line.

The environment is made with `python -m venv`; ssegrade is installed from a copy of this
checkout with `--no-deps`, then its core dependencies at the versions this environment has
(pip finds them in its cache or the configured indexes).
"""

from __future__ import annotations

import importlib.metadata
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.runfolders import summary, write_run

pytestmark = pytest.mark.slow

TOP = Path(__file__).resolve().parents[2]
CORE = ("pydantic", "returns", "PyYAML", "sh", "psutil")
EXTRAS = ("click", "rich", "fastapi", "starlette", "uvicorn", "httpx", "jinja2", "hypothesis")

EMBED = """
import sys

from ssegrade import CheckOutcome, Finished, GradeOptions, Outcomes, bencher_interpreter, decide
from ssegrade.testing import SCENARIOS, FakeWorld, Grading, check_interpreter

verdict = decide(
    Outcomes(
        has=frozenset({"build", "poc"}),
        pocs=("/t/pocs/a",),
        runs=(CheckOutcome("build", True, ""), CheckOutcome("poc", False, "boom", "/t/pocs/a")),
        ending=Finished(),
    )
)
print(verdict.status, verdict.error_msg)

scenario = SCENARIOS[3]
world = FakeWorld(patch=b"x\\n", scripts=dict(scenario.scripts))
print(world.grade(scenario.task()).patch_result.error_msg)


class fake:
    def __init__(self, scenario):
        patch = b"x\\n" if scenario.changed else b""
        self.world = FakeWorld(patch=patch, scripts=dict(scenario.scripts))
        self.task = scenario.task()

    def __enter__(self):
        interpret = bencher_interpreter(self.world.session(self.task, "/task"), self.world)
        return Grading(interpret, GradeOptions(self.task, "/task"))

    def __exit__(self, *exc):
        return False


print(len(check_interpreter(fake)), "scenarios conform")
extras = ("click", "rich", "fastapi", "httpx", "jinja2", "hypothesis")
print(sorted(m for m in extras if m in sys.modules))
try:
    import ssegrade.testing.strategies
except ModuleNotFoundError as missing:
    print("strategies need", missing.name)
"""


def _run(
    *argv: str | Path, cwd: Path = Path("/"), env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `argv` away from this checkout (which `python -c` would import first)."""
    return subprocess.run(
        [str(arg) for arg in argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _pins(*names: str) -> list[str]:
    """Each distribution at the version this environment has."""
    return [f"{name}=={importlib.metadata.version(name)}" for name in names]


@pytest.fixture(scope="module")
def bare(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtual environment with ssegrade and its core dependencies, and no extra."""
    root = tmp_path_factory.mktemp("bare")
    copy = root / "ssegrade-src"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info", "build")
    for part in ("ssegrade", "interpreters"):
        shutil.copytree(TOP / part, copy / part, ignore=ignore)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(TOP / name, copy / name)
    venv = root / "venv"
    made = _run(sys.executable, "-m", "venv", venv)
    assert made.returncode == 0, made.stderr
    pip = (venv / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check")
    installed = _run(*pip, "--no-deps", copy)
    assert installed.returncode == 0, installed.stderr
    installed = _run(*pip, "--only-binary", ":all:", *_pins(*CORE))
    assert installed.returncode == 0, installed.stderr
    return venv


def test_the_bare_install_has_the_core_dependencies_and_no_extra(bare: Path) -> None:
    code = (
        "import importlib.util as u; "
        f"print([m for m in {EXTRAS!r} if u.find_spec(m) is not None]); "
        "import pydantic, returns, yaml, sh"
    )
    done = _run(bare / "bin" / "python", "-c", code)
    assert (done.returncode, done.stdout.strip()) == (0, "[]"), done.stderr


def test_the_bare_install_embeds_the_verdict_and_the_grading_program(bare: Path) -> None:
    done = _run(bare / "bin" / "python", "-c", EMBED, cwd=bare)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "failed PoC failed: /t/pocs/a",
        "PoC failed: /task/pocs/poc2.bin",
        "9 scenarios conform",
        "[]",
        "strategies need hypothesis",
    ]


def test_the_console_script_names_the_extra_it_misses(bare: Path, tmp_path: Path) -> None:
    ssegrade = bare / "bin" / "ssegrade"
    done = _run(ssegrade, "--help")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        "ssegrade: error: the 'cli' extra is not installed: pip install 'ssegrade[cli]'"
    ]
    # With the `cli` extra beside it (in a folder of its own: the environment stays bare).
    cli = tmp_path / "cli"
    pip = (bare / "bin" / "python", "-m", "pip", "install", "-q", "--disable-pip-version-check")
    installed = _run(*pip, "--only-binary", ":all:", "--target", cli, *_pins("click", "rich"))
    assert installed.returncode == 0, installed.stderr
    with_cli = {**os.environ, "PYTHONPATH": str(cli)}
    helped = _run(ssegrade, "--help", env=with_cli)
    assert helped.returncode == 0, helped.stderr
    assert "evaluate" in helped.stdout
    assert "daemon      (needs the 'daemon' extra)" in helped.stdout
    results = tmp_path / "results"
    write_run(results, "t1/m/a/r1", summary(model="m", agent="a"))
    table = _run(ssegrade, "report", results, env=with_cli)
    assert table.returncode == 0, table.stderr
    for argv, extra in (
        (("daemon", "--help"), "daemon"),
        (("test-patch", "--help"), "daemon"),
        (("report", results, "--format", "html"), "report"),
    ):
        done = _run(ssegrade, *argv, env=with_cli)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert done.stderr.splitlines() == [
            f"ssegrade: error: the '{extra}' extra is not installed: "
            f"pip install 'ssegrade[{extra}]'"
        ]
