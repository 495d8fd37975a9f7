"""The environment the agent's bash tool and the task scripts get (SPEC §5): built from an
allow-list, with every value that carries a credential left out unless the operator names it,
and the temporary folders in the grading's own scratch.

Written as the attacks went: credentials and database URLs in the evaluator's or the daemon's
environment reached the agent through its bash tool and through a build's output; `TMP` and
`TEMP` kept naming the evaluator's folders. Hypothesis properties of the rule, a real script,
and a real daemon.
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
from interpreters.real.runner import EnvPolicy, resolve_runner, run_script, script_environment
from interpreters.real.runner.environment import (
    ALLOWED_NAMES,
    ALLOWED_PREFIXES,
    ALLOWED_SUFFIX,
    allowed,
    credential,
    left_out,
    names_paths,
)
from tests.support.agentaccounts import agent_account
from tests.support.daemons import post_bencher, running_daemon
from tests.support.processes import TEST_RUNNER, write_script
from tests.support.realtask import make_task

HOME = Path("/scratch/session-1/home")

ATTACK = {
    "OPENAI_API_KEY": "sk-live-0123",
    "GITHUB_PAT": "ghp_0123",
    "DATABASE_URL": "postgres://user:pw@db/x",
    "PIP_INDEX_URL": "https://ci:token@host/simple",
    "MYSQL_PWD": "hunter2",
    "SOME_AUTH_HEADER": "Bearer abc",
    "GOPROXY": "https://builder:s3cret@proxy.corp/go",
    "FOO": "bar",
}
"""What the evaluator's environment held; none of it may reach the agent or a script."""
TOOLCHAIN = {"GOFLAGS": "-mod=vendor", "CARGO_HOME": "/usr/local/cargo", "TZ": "UTC"}
"""What it held that scripts need: all of it arrives."""

upper = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", max_size=6)
plain = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789-_.,=/:", max_size=20)
credential_names = st.one_of(
    st.builds(
        lambda before, word, after: before + word + after,
        upper,
        st.sampled_from(["KEY", "TOKEN", "SECRET", "PASSWORD", "AUTH", "CREDENTIAL", "COOKIE"]),
        upper,
    ),
    st.builds(lambda before, end: before + end, upper, st.sampled_from(["_PAT", "_PWD"])),
)
userinfo = st.builds(
    lambda before, scheme, user, password, after: f"{before}{scheme}://{user}{password}@{after}",
    plain,
    st.sampled_from(["https", "postgres", "git+ssh", "mysql", "amqp"]),
    st.text(alphabet="abcxyz019-._~%", max_size=8),
    st.one_of(st.just(""), st.text(alphabet="abc019!$&'()*+,;=", max_size=8).map(":{}".format)),
    plain,
)
allowed_names = st.one_of(
    st.sampled_from(sorted(ALLOWED_NAMES)),
    st.builds(
        lambda prefix, rest: prefix + rest, st.sampled_from(["LC_", "CGO_", "CARGO_"]), upper
    ),
    st.builds(lambda rest: f"{rest}_HOME", upper),
)


@given(st.sampled_from(["", "CARGO_", "PYTHON"]), credential_names, plain)
def test_a_credential_name_never_reaches_a_script_even_with_an_allowed_prefix(
    prefix: str, word: str, value: str
) -> None:
    name = prefix + word
    assert credential(name, value)
    env = script_environment(EnvPolicy(), home=HOME, session="s", run="r", ours={name: value})
    assert name not in env
    assert left_out(EnvPolicy(), {name: value}) == [f"{name} (credential)"]


@given(allowed_names, userinfo)
def test_a_value_with_a_user_part_never_reaches_a_script_unless_named(
    name: str, value: str
) -> None:
    assert credential(name, value)
    env = script_environment(EnvPolicy(), home=HOME, session="s", run="r", ours={name: value})
    assert value not in env.values()
    named = EnvPolicy(extra=((name, value),))
    assert (
        script_environment(named, home=HOME, session="s", run="r", ours={name: value})[name]
        == value
    )
    assert left_out(named, {name: value}) == []


@given(allowed_names, plain)
def test_an_allowed_variable_without_a_credential_arrives_as_it_is(name: str, value: str) -> None:
    if credential(name, value) or name in ("PATH", "LANG", "LC_ALL"):
        return
    env = script_environment(EnvPolicy(), home=HOME, session="s", run="r", ours={name: value})
    assert env[name] == value


@given(st.dictionaries(st.from_regex(r"[A-Z][A-Z0-9_]{0,10}", fullmatch=True), plain))
def test_only_allowed_names_arrive(ours: dict[str, str]) -> None:
    env = script_environment(EnvPolicy(), home=HOME, session="s", run="r", ours=ours)
    ours_only = {name for name in env if name in ours and env[name] == ours[name]}
    assert all(allowed(name) or names_paths(ours[name]) for name in ours_only)
    listed = {entry.split(" ", 1)[0] for entry in left_out(EnvPolicy(), ours)}
    assert {name for name in ours if not allowed(name) and not names_paths(ours[name])} <= listed


def test_a_task_images_own_toolchain_folder_arrives_whatever_its_name(work: Path) -> None:
    """A task image sets its toolchain in variables of its own naming (`KVC_TOOLCHAIN`): a
    value that names existing folders is the image's setting, and the scripts need it; a
    value naming nothing that exists, or a relative path, is not let through by that rule."""
    (work / "bin").mkdir()
    ours = {
        "KVC_TOOLCHAIN": str(work),
        "KVC_PATHS": f"{work}/bin:/nonexistent",
        "KVC_NOTHING": "/nonexistent/x",
        "KVC_RELATIVE": "bin",
        "KVC_TOKEN_FILE": str(work),
    }
    env = script_environment(EnvPolicy(), home=HOME, session="s", run="r", ours=ours)
    assert env["KVC_TOOLCHAIN"] == str(work)
    assert env["KVC_PATHS"] == f"{work}/bin:/nonexistent"
    assert not {"KVC_NOTHING", "KVC_RELATIVE", "KVC_TOKEN_FILE"} & set(env)
    hidden = EnvPolicy(hidden=(str(work),))
    assert "KVC_TOOLCHAIN" not in script_environment(
        hidden, home=HOME, session="s", run="r", ours=ours
    )


@pytest.fixture
def work() -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-envallow-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


def _env_of(output: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in output.splitlines() if "=" in line)


def _only_the_allowed(env: dict[str, str]) -> None:
    assert not set(ATTACK) & set(env), sorted(set(ATTACK) & set(env))
    assert {name: env[name] for name in TOOLCHAIN} == TOOLCHAIN
    assert not any(secret in "\n".join(env.values()) for secret in ("pw@", "token@", "hunter2"))


def _script_env(work: Path, home: Path, policy: EnvPolicy) -> tuple[dict[str, str], str]:
    """What a real script run under `policy` gets, and its log's header."""
    done = run_script(
        resolve_runner(None, default=TEST_RUNNER).unwrap(),
        [str(write_script(work, "#!/bin/sh\nenv\n"))],
        work,
        home=home,
        limit=20,
        log_path=work / "logs" / "env.log",
        label="env",
        env=policy,
    )
    assert done.code == 0, done.stderr
    return _env_of(done.stdout), Path(str(done.log_file)).read_text().split("--- stdout")[0]


@pytest.mark.slow
def test_tmp_and_temp_name_the_scripts_own_scratch(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TMP", "/x")
    monkeypatch.setenv("TEMP", "/y")
    env, _ = _script_env(work, work / "home", EnvPolicy())
    assert env["TMP"] == env["TEMP"] == env["TMPDIR"] == str(work / "home")


@pytest.mark.slow
def test_a_script_gets_no_credential(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in {**ATTACK, **TOOLCHAIN}.items():
        monkeypatch.setenv(name, value)
    home = work / "home"

    env, header = _script_env(work, home, EnvPolicy())
    _only_the_allowed(env)
    for name in ATTACK:
        assert name in header  # listed as left out, by name
    assert "hunter2" not in header
    env, _ = _script_env(work, home, EnvPolicy(extra=(("GITHUB_PAT", "ghp_0123"),)))
    assert env["GITHUB_PAT"] == "ghp_0123"


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the agent's own account needs root")
def test_the_bash_tool_and_a_build_get_no_credential_of_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp_path.chmod(0o755)
    made = make_task(tmp_path / "t")
    made.script("build.sh", "#!/bin/sh\nenv\n")
    for name, value in {**ATTACK, **TOOLCHAIN}.items():
        monkeypatch.setenv(name, value)
    with agent_account() as agent:
        home = agent.pw_dir
        args = ("--agent-user", agent.pw_name, "--script-env", "GITHUB_PAT")
        with running_daemon(made.task, made.source, made.results, *args) as daemon:
            with daemon.http("agent", prefix="") as wire:
                shell = wire.post(
                    "/tool/bash", params={"action": "execute"}, json={"command": "env"}
                )
                build = post_bencher(wire, "build", grading=False)
            assert shell.status_code == 200
            assert build.status_code == 200
    for got in (_env_of(shell.json()["stdout"]), _env_of(build.json()["stdout"])):
        assert got.pop("GITHUB_PAT") == "ghp_0123"  # named by the operator
        _only_the_allowed(got)
    assert _env_of(shell.json()["stdout"])["HOME"] == home


def test_the_docs_name_the_whole_allow_list() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "daemon.md").read_text()
    section = text.split("### The environment of the `bash` tool and of scripts", 1)[1]
    names = (*ALLOWED_NAMES, *ALLOWED_PREFIXES, f"*{ALLOWED_SUFFIX}")
    missing = [n for n in names if f"`{n}" not in section]
    assert missing == []
