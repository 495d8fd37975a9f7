"""The environment of a task script (SPEC §5): what the allow-list names of the evaluator's own,
minus what leads to grading material or the admin side, with HOME, TMPDIR and caches in the
session's scratch home.

Hypothesis properties of `script_environment`, and a real script that dumps what it got.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.real.files import remove_tree
from interpreters.real.runner import (
    RUN_VAR,
    SESSION_VAR,
    EnvPolicy,
    Runner,
    resolve_runner,
    run_script,
    script_environment,
)
from interpreters.real.runner.environment import SECRET_NAMES, allowed, credential_like
from tests.support.processes import TEST_RUNNER, write_script

HIDDEN = ("/var/lib/results", "/srv/baseline", "/run/admin")
HOME = Path("/scratch/session-1/home")

names = st.one_of(
    st.sampled_from(["GOPATH", "GOFLAGS", "CARGO_HOME", "PYTHONPATH", "LC_TIME", "CC"]),
    st.from_regex(r"[A-Z][A-Z0-9_]{0,8}", fullmatch=True),
)
inside = st.builds(
    lambda folder, rest: folder + rest,
    st.sampled_from(HIDDEN),
    st.sampled_from(["", "/", "/x", "/a/b.sock", "/../admin"]),
)
outside = st.sampled_from(["/usr/bin", "/var/lib/results2", "-mod=vendor", "relative", "", "/"])
values = st.one_of(
    inside,
    outside,
    st.lists(st.one_of(inside, outside), min_size=1, max_size=3).map(":".join),
)


def _leads_inside(value: str) -> bool:
    for part in value.split(":"):
        norm = os.path.normpath(part) if part.startswith("/") else ""
        if any(norm == h or norm.startswith(h + "/") for h in HIDDEN):
            return True
    return False


@given(st.dictionaries(names, values, max_size=12), st.booleans())
def test_no_variable_leads_to_hidden_folders(ours: dict[str, str], clean: bool) -> None:
    env = script_environment(
        EnvPolicy(clean=clean, hidden=HIDDEN), home=HOME, session="s", run="r", ours=ours
    )
    assert not any(_leads_inside(value) for value in env.values())
    assert not SECRET_NAMES & set(env)
    for name, value in ours.items():
        kept = allowed(name) and not credential_like(name) and not _leads_inside(value)
        ours_only = name not in {"PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME", "GOCACHE"}
        if kept and ours_only and name not in {"CCACHE_DIR", "LANG"} and not clean:
            assert env[name] == value


@given(st.dictionaries(names, outside, max_size=8), st.lists(st.tuples(names, outside)))
def test_extra_pairs_win_and_markers_are_ours(
    ours: dict[str, str], extra: list[tuple[str, str]]
) -> None:
    pairs = (*extra, (SESSION_VAR, "forged"), ("HOME", "/elsewhere"))
    env = script_environment(EnvPolicy(extra=pairs), home=HOME, session="s", run="r", ours=ours)
    assert (env[SESSION_VAR], env[RUN_VAR], env["HOME"]) == ("s", "r", "/elsewhere")
    for name, value in dict(extra).items():
        if name not in (SESSION_VAR, RUN_VAR, "HOME"):
            assert env[name] == value
    assert env["TMPDIR"] == str(HOME)
    assert env["GOCACHE"].startswith(f"{HOME}/")


def test_a_clean_environment_keeps_path_and_locale_only() -> None:
    ours = {"PATH": "/bin:./rel", "LANG": "de_DE.UTF-8", "LC_TIME": "C", "GOFLAGS": "-x"}
    env = script_environment(EnvPolicy(clean=True), home=HOME, session="s", run="r", ours=ours)
    assert env["PATH"] == "/bin"
    assert (env["LANG"], env["LC_TIME"]) == ("de_DE.UTF-8", "C")
    assert "GOFLAGS" not in env


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-env-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.mark.slow
def test_a_script_gets_the_toolchain_and_nothing_that_leads_to_grading_material(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runner: Runner = resolve_runner(None, default=TEST_RUNNER).unwrap()
    results, baseline, admin = work / "results", work / "baseline", work / "admin"
    for folder in (results, baseline, admin):
        folder.mkdir()
    (work / "link").symlink_to(results)
    planted = {
        "SSE_ADMIN_SOCKET": "/nowhere/admin.sock",
        "SSE_RESULTS": "/nowhere",
        "SSE_BASELINE": "/nowhere",
        "SSE_REPO_PATH": "/nowhere",
        "LEAK_RESULTS": str(results / "result.json"),
        "LEAK_LIST": f"/usr/bin:{baseline}/bin",
        "LEAK_ADMIN": f"{admin}/",
        "LEAK_LINK": str(work / "link" / "logs"),
    }
    toolchain = {"GOFLAGS": "-mod=vendor", "CARGO_HOME": "/usr/local/cargo"}
    for name, value in {**planted, **toolchain}.items():
        monkeypatch.setenv(name, value)
    result = run_script(
        runner,
        [str(write_script(work, "#!/bin/sh\nenv\n"))],
        work,
        home=work / "home",
        limit=20,
        log_path=results / "logs" / "env.log",
        label="env",
        env=EnvPolicy(hidden=(str(results), str(baseline), str(admin))),
    )
    env = dict(line.split("=", 1) for line in result.stdout.splitlines() if "=" in line)
    assert not set(planted) & set(env)
    assert not any(str(folder) in result.stdout for folder in (results, baseline, admin))
    assert "admin.sock" not in result.stdout
    assert {name: env[name] for name in toolchain} == toolchain
    header = Path(str(result.log_file)).read_text().split("--- stdout")[0]
    assert "CARGO_HOME" in header
    assert "-mod=vendor" not in header
