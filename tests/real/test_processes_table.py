"""The process table as the sweep and the account's end read it
(`interpreters.real.runner.processes`), on real processes.

What each scan must see: a process in a session and group of its own, a zombie child (which
`children_of` lists, so that no sweep reaps a `Popen`'s child), a process that keeps an
account only as its saved uid (it can become that account again at any moment), and none
of an account's zombies (which no signal ends).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from interpreters.real.runner.processes import (
    account_processes,
    children_of,
    kill_account,
    processes,
)
from tests.support.agentaccounts import agent_account
from tests.support.processes import unique
from tests.support.waiting import wait_until

root_only = pytest.mark.skipif(os.geteuid() != 0, reason="needs root (another account)")


def _sleeper(*, session: bool = False) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", f"300.{unique()}"], start_new_session=session)


def _zombie() -> subprocess.Popen[bytes]:
    """A child that has exited and is not reaped yet."""
    child = subprocess.Popen(["true"])

    def zombie() -> bool:
        item = processes().get(child.pid)
        return item is not None and item.zombie

    wait_until(zombie, "the child to exit", 10, 0.01)
    return child


def test_the_table_has_each_process_with_its_parent_group_and_session() -> None:
    alone, plain = _sleeper(session=True), _sleeper()
    try:
        table = processes()
        me = os.getpid()
        assert table[alone.pid].ppid == me
        assert (table[alone.pid].pgid, table[alone.pid].sid) == (alone.pid, alone.pid)
        assert (table[plain.pid].pgid, table[plain.pid].sid) == (os.getpgid(0), os.getsid(0))
        assert not table[alone.pid].zombie
        assert table[me].ppid == os.getppid()
    finally:
        for child in (alone, plain):
            child.kill()
            child.wait()


def test_a_zombie_child_is_in_the_table_and_among_the_children() -> None:
    zombie = _zombie()
    living = _sleeper()
    try:
        assert processes()[zombie.pid].zombie
        assert {zombie.pid, living.pid} <= children_of(os.getpid())
    finally:
        living.kill()
        living.wait()
        zombie.wait()
    assert zombie.pid not in children_of(os.getpid())
    assert living.pid not in children_of(os.getpid())


def test_children_of_a_process_that_is_gone_is_empty() -> None:
    child = subprocess.Popen(["true"])
    child.wait()
    assert children_of(child.pid) == frozenset()


@root_only
def test_a_process_that_keeps_the_account_as_its_saved_uid_is_found_and_killed() -> None:
    ready = os.pipe()
    with agent_account() as account:
        # Root in name (real and effective uid 0), the account as its saved uid only: it can
        # become the account at will, so it belongs to the account's processes.
        code = (
            f"import os, time; os.setresuid(0, 0, {account.pw_uid}); "
            f"os.write({ready[1]}, b'1'); time.sleep(300)"
        )
        hidden = subprocess.Popen([sys.executable, "-c", code], pass_fds=(ready[1],))
        os.close(ready[1])
        try:
            assert os.read(ready[0], 1) == b"1"
            assert hidden.pid in account_processes(account.pw_uid)
            assert kill_account(account.pw_uid, account.pw_gid) == []
            assert hidden.wait(10) == -signal.SIGKILL
        finally:
            os.close(ready[0])
            hidden.kill()
            hidden.wait()


@root_only
def test_a_zombie_of_the_account_is_not_among_its_processes() -> None:
    with agent_account() as account:
        uid, gid = account.pw_uid, account.pw_gid
        child = subprocess.Popen(["true"], user=uid, group=gid, extra_groups=[])
        try:
            wait_until(lambda: processes()[child.pid].zombie, "the child to exit", 10, 0.01)
            assert account_processes(uid) == []
            assert kill_account(uid, gid, seconds=1) == []
        finally:
            child.wait()
