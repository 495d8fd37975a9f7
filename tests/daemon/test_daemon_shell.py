"""The agent's `bash` tool (`interpreters.daemon.shell.AgentShell`): a real `bash -i`.

One shell across commands (directory and variables carry over), each command's status, output
and errors apart, never root (the account's uid, or a refusal), stdin never read from the next
command, a time limit that closes the shell, `exit` and `close` that end it for good and kill
what it started.
"""

from __future__ import annotations

import os
import pwd
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.daemon.shell import AgentShell, ShellError
from interpreters.real.runner import EnvPolicy
from tests.support.agentaccounts import agent_account
from tests.support.waiting import wait_until


@pytest.fixture(scope="module")
def account() -> Iterator[str]:
    """The shell's account: a throwaway one (closing a shell kills all its processes)."""
    if os.geteuid() != 0:
        yield "unused"  # not root: the shell runs as us
        return
    with agent_account() as entry:
        yield entry.pw_name


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tmp_path.chmod(0o755)
    (tmp_path / "sub").mkdir()
    return tmp_path


@pytest.fixture
def shell(tree: Path, account: str) -> Iterator[AgentShell]:
    made = AgentShell(tree, account)
    yield made
    made.close()


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_one_shell_across_commands(shell: AgentShell, tree: Path) -> None:
    first = shell.run("pwd; cd sub; export MARK=kept; echo warn >&2", 30)
    assert (first.code, first.stdout, first.stderr) == (0, f"{tree}\n", "warn\n")
    second = shell.run('pwd; echo "$MARK"; printf no-newline', 30)
    assert (second.code, second.stdout) == (0, f"{tree}/sub\nkept\nno-newline")
    assert shell.run("(exit 42)", 30).code == 42
    assert shell.run("false # a comment does not swallow the status", 30).code == 1


def test_never_root(shell: AgentShell, account: str) -> None:
    uid = shell.run("id -u; id -G", 30).stdout.split("\n")
    expected = pwd.getpwnam(account).pw_uid if os.geteuid() == 0 else os.geteuid()
    assert int(uid[0]) == expected
    if os.geteuid() == 0:
        assert expected != 0
        assert "0" not in uid[1].split()  # no supplementary group of root's


@pytest.mark.skipif(os.geteuid() != 0, reason="accounts are switched by root only")
def test_a_missing_or_root_account_is_refused(tree: Path) -> None:
    with pytest.raises(ShellError, match="never runs as root"):
        AgentShell(tree, "no-such-account-xyz").run("true", 30)
    with pytest.raises(ShellError, match="is root"):
        AgentShell(tree, "root").run("true", 30)


def test_a_command_never_reads_the_next_one(shell: AgentShell) -> None:
    assert shell.run("cat; read line; echo read=$?", 30).stdout == "read=1\n"
    assert shell.run("echo after", 30).stdout == "after\n"


def test_the_admin_socket_is_not_in_its_environment(
    tree: Path, account: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSE_ADMIN_SOCKET", "/run/admin/admin.sock")
    monkeypatch.setenv("GOPATH", "/var/hidden/results")  # allowed, but hidden
    made = AgentShell(tree, account, EnvPolicy(hidden=("/var/hidden",)))
    try:
        out = made.run('echo "[$SSE_ADMIN_SOCKET][$GOPATH][$HOME]"', 30).stdout
    finally:
        made.close()
    home = pwd.getpwnam(account).pw_dir if os.geteuid() == 0 else os.environ["HOME"]
    assert out == f"[][][{home}]\n"


def test_a_command_past_its_limit_closes_the_shell(shell: AgentShell) -> None:
    started = time.monotonic()
    done = shell.run("echo before; sleep 60", 1)
    assert time.monotonic() - started < 30
    assert (done.code, done.killed, done.stdout) == (-1, True, "before\n")
    assert "killed after 1 s" in done.stderr
    with pytest.raises(ShellError, match="bash process has died"):
        shell.run("true", 30)


def test_exit_ends_it_for_good(shell: AgentShell) -> None:
    done = shell.run("echo bye; exit 3", 30)
    assert (done.code, done.stdout) == (3, "bye\n")
    with pytest.raises(ShellError, match=r"^bash process has died$"):
        shell.run("true", 30)


def test_close_kills_what_it_started_and_a_running_command(shell: AgentShell) -> None:
    pid = int(shell.run("sleep 300 >/dev/null 2>&1 & echo $!", 30).stdout)
    assert alive(pid)
    answers = []
    running = threading.Thread(target=lambda: answers.append(shell.run("sleep 300", 600)))
    running.start()
    deadline = time.monotonic() + 30
    while "sleep 300" not in _children_commands(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    shell.close()
    running.join(30)
    assert not running.is_alive()
    assert answers[0].code != 0
    wait_until(lambda: not alive(pid), "the shell's bash to end", 30)
    with pytest.raises(ShellError, match="bash process has died"):
        shell.run("true", 30)


def _children_commands(sibling: int) -> str:
    """The command lines of the processes in `sibling`'s process group."""
    try:
        group = os.getpgid(sibling)
    except ProcessLookupError:
        return ""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != sibling:
            try:
                if os.getpgid(int(entry.name)) == group:
                    found.append((entry / "cmdline").read_bytes().replace(b"\0", b" ").decode())
            except (ProcessLookupError, FileNotFoundError, PermissionError):
                continue
    return "\n".join(found)
