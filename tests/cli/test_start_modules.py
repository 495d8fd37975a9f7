"""`ssegrade --version`, every command's `--help` and the one-line input errors load only
what they need: click and a few of ssegrade's own light modules, never the real interpreter,
the pydantic models, the server, the report's pages, rich or Ray (SPEC §8: a fast start).

Not timed (the host is shared): each command runs in a subprocess as the console script runs
it, and the names in its `sys.modules` are written out as it ends (`python -X importtime`
would miss the modules loaded through `importlib.import_module`, as lazy names are).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

HEAVY = {"pydantic", "fastapi", "starlette", "uvicorn", "httpx", "rich", "jinja2", "ray"}
HEAVY |= {"hypothesis", "sh", "yaml", "returns"}
"""Libraries none of these commands may load."""

LIGHT = {
    "ssegrade",
    "ssegrade._lazy",
    "ssegrade.internal",  # the package alone: it loads none of its modules
    "ssegrade.internal.errors",
    "ssegrade.internal.text",
    "interpreters",
    "interpreters.real",
    "interpreters.real.logs",
    "interpreters.daemon",
    "interpreters.daemon.binding",  # the daemon's admin socket, bound first (entry.py)
    "interpreters.daemon.starting",  # and answered at once (standard library only)
}
"""ssegrade's modules a command may load besides its command line's (`interpreters.cli`)."""

COMMANDS = ["evaluate", "baseline", "daemon", "test-patch", "verify", "batch", "report"]
COMMANDS += ["replay", "schema", "bundle"]


def _loaded(arguments: list[str], cwd: Path) -> set[str]:
    """Every module `ssegrade ARGUMENTS` loads, as the console script runs it."""
    out = cwd / "modules.txt"
    code = (
        "import sys\n"
        "from interpreters.cli.entry import main\n"
        f"sys.argv = ['ssegrade', *{arguments!r}]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        f"    open({str(out)!r}, 'w').write('\\n'.join(sorted(sys.modules)))\n"
    )
    env = {**os.environ, "SSE_ADMIN_SOCKET": str(cwd / "admin" / "admin.sock")}
    subprocess.run(
        [sys.executable, "-c", code],
        check=False,
        capture_output=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    return set(out.read_text().split())


def _too_much(loaded: set[str]) -> list[str]:
    heavy = [name for name in loaded if name.partition(".")[0] in HEAVY]
    ours = [
        name
        for name in loaded
        if name.partition(".")[0] in ("ssegrade", "interpreters")
        and not name.startswith("interpreters.cli")
        and name not in LIGHT
    ]
    return sorted(heavy + ours)


@pytest.mark.parametrize(
    "arguments",
    [["--version"], ["--help"], *([name, "--help"] for name in COMMANDS)],
    ids=" ".join,
)
def test_version_and_help_load_nothing_heavy(arguments: list[str], tmp_path: Path) -> None:
    assert _too_much(_loaded(arguments, tmp_path)) == []


@pytest.mark.parametrize(
    "arguments",
    [
        ["evaluate", "--bogus"],
        ["evaluate", "--task", "no-such-task"],
        ["evaluate", "--timeout", "0"],
        ["report", ".", "--format", "pdf"],
        ["report", "no-such-folder"],
        ["batch", "jobs.jsonl"],
        ["verify"],
        ["daemon", "--http-port", "0"],
    ],
    ids=" ".join,
)
def test_a_usage_error_loads_nothing_heavy(arguments: list[str], tmp_path: Path) -> None:
    assert _too_much(_loaded(arguments, tmp_path)) == []


REJECTED = {
    "not YAML": "id: [\n",
    "not a mapping": "- id\n",
    "missing key": "scripts: {build: build.sh}\n",
    "wrong type": "id: t\nscripts: {build: 3}\n",
    "unknown key": "id: t\nfiles: {pocs: [p]}\n",
    "escaping path": "id: t\nscripts: {build: ../b.sh}\n",
}


@pytest.mark.parametrize("config", list(REJECTED.values()), ids=list(REJECTED))
def test_a_rejected_task_is_said_before_the_task_model_loads(config: str, tmp_path: Path) -> None:
    """A config.yaml whose YAML or a key's presence or type is wrong is refused by the first
    look (`ssegrade.internal.task_shape`): pydantic and the task model never load (YAML does, and
    `returns` with the safe reader, as for a missing file)."""
    task = tmp_path / "task"
    task.mkdir()
    (task / "config.yaml").write_text(config)
    for patch in (["--patch", "/dev/null"], []):
        loaded = _loaded(["evaluate", "--task", str(task), *patch], tmp_path)
        assert "ssegrade.internal.task_shape" in loaded
        light = HEAVY - {"yaml", "returns"}
        assert [name for name in loaded if name.partition(".")[0] in light] == []
        assert "ssegrade.internal.task" not in loaded


def test_a_task_only_the_model_rejects_loads_the_task_model_and_no_more(tmp_path: Path) -> None:
    """A value the first look leaves to the model (a YAML set) is judged by the real model,
    and nothing that grades loads."""
    task = tmp_path / "task"
    task.mkdir()
    (task / "config.yaml").write_text("id: t\nfiles: {poc: !!set {p}}\n")
    loaded = _loaded(["evaluate", "--task", str(task), "--patch", "/dev/null"], tmp_path)
    assert "ssegrade.internal.task" in loaded  # the config was read, by the real model
    never = ("fastapi", "uvicorn", "httpx", "rich", "jinja2", "ray", "sh")
    assert [name for name in loaded if name.partition(".")[0] in never] == []
    grading = {"interpreters.real.local", "interpreters.app.grading", "interpreters.real.git"}
    grading |= {"ssegrade.internal.effects", "ssegrade.internal.program", "ssegrade.guard"}
    assert loaded & grading == set()


def test_verify_of_a_missing_folder_loads_nothing_heavy(tmp_path: Path) -> None:
    """`ssegrade verify MISSING` says so before the grading modules load."""
    loaded = _loaded(["verify", str(tmp_path / "none"), str(tmp_path / "other")], tmp_path)
    assert _too_much(loaded) == []


@pytest.mark.parametrize(
    "arguments",
    [["replay", "no-such-trace"], ["evaluate", "--task", ".", "--patch", "no-such-patch"]],
    ids=" ".join,
)
def test_a_missing_file_loads_its_safe_reader_and_no_more(
    arguments: list[str], tmp_path: Path
) -> None:
    """A file named on the command line is read without following links, by the real
    interpreter's reader (`interpreters.real.untrusted`): that much loads, not what grades."""
    loaded = _loaded(arguments, tmp_path)
    assert "interpreters.real.untrusted" in loaded
    heavy = [name for name in loaded if name.partition(".")[0] in HEAVY - {"returns"}]
    assert heavy == []
    grading = {"interpreters.app.setup", "interpreters.real.local", "interpreters.real.git"}
    grading |= {"ssegrade.trace", "ssegrade.internal.effects", "ssegrade.internal.task"}
    assert loaded & grading == set()


def test_the_help_shows_the_real_defaults() -> None:
    """The defaults the command line shows without loading the real interpreter are its."""
    from interpreters.cli import batch, options, report, script_options, verify
    from interpreters.real.resultsfolder import DEFAULT_RESULTS
    from interpreters.real.runner.policy import DEFAULT_TMP_SIZE
    from ssegrade.batch import RETRY_KINDS
    from ssegrade.guard import KINDS
    from ssegrade.internal.result import ERROR_KINDS

    assert str(DEFAULT_RESULTS) == options.DEFAULT_RESULTS
    assert script_options.DEFAULT_TMP_SIZE == DEFAULT_TMP_SIZE
    assert batch.ERROR_KINDS == ERROR_KINDS
    assert batch.RETRY_KINDS == RETRY_KINDS
    from ssegrade.batch import CHEATS

    assert verify.CHEATS == CHEATS
    from interpreters.cli import container_options
    from ssegrade.batch import Limits

    copied = (container_options.MEMORY, container_options.PIDS, container_options.TMP_SIZE)
    assert copied == (Limits().memory, Limits().pids, Limits().tmp_size)
    assert report.KINDS == KINDS
