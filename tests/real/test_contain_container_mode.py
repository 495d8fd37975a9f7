"""`container` containment, decided from the kernel's view (SPEC §5 "Containment").

The rules as properties, the kernel facts given as data: a PID namespace of the host's is
never a container whatever the files say (this machine carries a `/.dockerenv`); `auto`
gives `full` where it can be had, else `container` inside a container, else refuses; a mode
asked for is had or refused, never another. The attacks, with real processes and files: what
the runner leaves (a `setsid` sleeper, files in the shared temporary folders, a link to a
file of root's) is gone after `clear_runner`, and nothing else is; the lock refuses a folder
others may write; a recorded patch graded with `SSE_BASELINE` naming no baseline.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.real.runner import ContainmentPolicy, ContainmentRefused
from interpreters.real.runner.account import Runner
from interpreters.real.runner.cgroups import Cgroups
from interpreters.real.runner.inside import INITIAL, Facts, Whereabouts, judge, read_facts
from interpreters.real.runner.probe import Offer, decide
from interpreters.real.runner.processes import account_processes
from interpreters.real.runner.residue import clear_runner, remove_runner_files
from interpreters.real.runner.turns import _open_lock
from tests.support.realtask import fix_to, make_task, ssegrade
from tests.support.waiting import wait_until

ROOT = os.geteuid() == 0
KINDS = sorted(INITIAL)
TOOLS = {"unshare": "/bin/unshare", "timeout": "/bin/timeout", "setpriv": "/bin/setpriv"}
MECHANISMS = ["PID namespace", "network namespace", "pids cgroup", "util-linux unshare"]

# ---------------------------------------------------------------------------- where we run

facts = st.builds(
    Facts,
    namespaces=st.fixed_dictionaries(
        {
            kind: st.one_of(st.none(), st.just(INITIAL[kind]), st.integers(4026531840, 1 << 32))
            for kind in KINDS
        }
    ),
    cgroup_subtree=st.booleans(),
    pid1_container=st.one_of(st.none(), st.sampled_from(["podman", "docker", "lxc"])),
    markers=st.sampled_from([(), ("/.dockerenv",), ("/run/.containerenv",)]),
    sys_admin=st.booleans(),
)


def other_signs(fact: Facts) -> int:
    own = [k for k in KINDS if k != "pid" and fact.namespaces[k] not in (None, INITIAL[k])]
    return len(own) + fact.cgroup_subtree + bool(fact.pid1_container) + len(fact.markers)


@given(facts)
def test_a_container_is_a_pid_namespace_of_its_own_and_one_more_sign(fact: Facts) -> None:
    where = judge(fact)
    own_pid = fact.namespaces["pid"] not in (None, INITIAL["pid"])
    assert where.container == (own_pid and other_signs(fact) >= 1)
    line = where.describe()
    assert "\n" not in line
    assert line.startswith("inside a container (" if where.container else "not inside")


@given(markers=st.sampled_from([("/.dockerenv",), ("/run/.containerenv", "/.dockerenv")]))
def test_marker_files_and_pid1s_variable_never_make_the_hosts_pid_namespace_a_container(
    markers: tuple[str, ...],
) -> None:
    # The attack on a guess from one file: the host (this machine has a /.dockerenv) would
    # kill every process of the runner account, other gradings' included.
    host = Facts(dict(INITIAL), True, "podman", markers, True)
    assert not judge(host).container
    assert "the host's PID namespace" in judge(host).describe()


def test_this_process_is_judged_by_its_namespaces() -> None:
    here = read_facts()
    initial = os.stat("/proc/self/ns/pid").st_ino == INITIAL["pid"]
    assert here.namespaces["pid"] == os.stat("/proc/self/ns/pid").st_ino
    if initial:
        assert not judge(here).container


# ---------------------------------------------------------------------------- the choice


@given(
    root=st.booleans(),
    missing=st.dictionaries(st.sampled_from(MECHANISMS), st.text(min_size=1, max_size=30)),
    inside=st.booleans(),
    sys_admin=st.booleans(),
    mode=st.sampled_from([None, "full", "container", "weak"]),
    network=st.sampled_from(["loopback", "host"]),
)
def test_auto_is_full_else_container_inside_a_container_else_refused(
    root: bool,
    missing: dict[str, str],
    inside: bool,
    sys_admin: bool,
    mode: str | None,
    network: str,
) -> None:
    where = Whereabouts(inside, ("pid namespace not the host's",) if inside else ())
    offer = Offer(
        root, TOOLS if root else {}, Cgroups(1, {}) if root else None, missing, (), where,
        sys_admin,
    )  # fmt: skip
    policy = ContainmentPolicy(mode, network)  # type: ignore[arg-type]
    needed = {name for name in missing if not (name == "network namespace" and network == "host")}
    if mode == "weak" or (mode is None and not root):
        expected: str | None = "weak"
    elif not root:
        expected = None
    elif mode == "container" or (mode is None and needed):
        expected = "container" if inside else None
    else:
        expected = None if needed else "full"
    if expected is None:
        with pytest.raises(ContainmentRefused) as refused:
            decide(offer, policy)
        line = str(refused.value)
        assert len(line.splitlines()) == 1
        if root and mode in (None, "full"):  # full asked for, or nothing else to be had
            assert line.startswith("full containment cannot be had: ")
            assert all(f"no {name} (" in line for name in needed)
        elif root:
            assert line.startswith("container containment cannot be had: not inside a container")
        return
    got = decide(offer, policy)
    assert got.mode == expected
    if expected == "container":
        assert got.network_line() == "network: the container's (container containment)"
        if mode is None:
            without = "full cannot be had" if sys_admin else "no CAP_SYS_ADMIN"
            assert got.describe().startswith(f"containment: container ({without}: no ")
            assert "inside a container (" in got.describe()


# ---------------------------------------------------------------------------- what is removed


def account() -> Runner:
    """An account of this test's own (a uid no one else uses: the kill takes the whole uid)."""
    uid = 3_000_000 + secrets.randbelow(1_000_000)
    return Runner(None, uid, uid, isolated=True)


@pytest.fixture
def open_folder() -> Iterator[Path]:
    """A folder another account can enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-cmode-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.skipif(not ROOT, reason="needs root (processes and files of another uid)")
def test_clear_runner_kills_a_setsid_sleeper_and_removes_what_it_left(open_folder: Path) -> None:
    tmp_path = open_folder
    runner = account()
    shared = tmp_path / "tmp"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    secret = tmp_path / "roots-file"
    secret.write_text("root's")
    grading = shared / "ssegrade-scratch"  # a grading's own folder: root's, the runner inside
    (grading / "home").mkdir(parents=True)
    os.chown(grading / "home", runner.uid, runner.gid)
    script = (
        f"setsid sleep 300 & mkdir {shared}/left && echo x > {shared}/left/f && "
        f"echo y > {shared}/file && ln -s {secret} {shared}/link && "
        f"echo z > {grading}/home/kept"
    )
    subprocess.run(
        ["sh", "-c", script], user=runner.uid, group=runner.gid, extra_groups=[], check=True,
        cwd="/", start_new_session=True,
    )  # fmt: skip
    wait_until(lambda: account_processes(runner.uid), "the sleeper to start", 5, 0.01)
    lines = clear_runner(runner, (str(shared),))
    assert account_processes(runner.uid) == []
    assert sorted(os.listdir(shared)) == ["ssegrade-scratch"]
    assert (grading / "home" / "kept").read_text() == "z\n"  # deeper down: the grading's
    assert secret.read_text() == "root's"  # the link went, never what it named
    assert any("killed" in line for line in lines), lines
    assert any("removed what the runner left" in line for line in lines), lines


@pytest.mark.skipif(not ROOT, reason="needs root (files of another uid)")
def test_a_shared_folder_that_is_a_link_is_not_followed(tmp_path: Path) -> None:
    runner = account()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("p")
    os.chown(target / "precious", runner.uid, runner.gid)
    (tmp_path / "tmp").symlink_to(target)
    removed, problems = remove_runner_files(runner.uid, (str(tmp_path / "tmp"),))
    assert (removed, problems) == ([], [])
    assert (target / "precious").exists()


def test_the_lock_is_refused_in_a_folder_others_may_write(tmp_path: Path) -> None:
    # The attack: a lock file in a folder the agent may write is a link it planted, or a
    # file it holds locked for ever.
    folder = tmp_path / "run"
    folder.mkdir()
    folder.chmod(0o1777)
    with pytest.raises(ContainmentRefused, match="writable by others than root"):
        _open_lock(str(folder))
    folder.chmod(0o755)
    if ROOT:
        (folder / "ssegrade-grading.lock").symlink_to(tmp_path / "planted")
        with pytest.raises(ContainmentRefused, match="no grading lock"):
            _open_lock(str(folder))
        assert not (tmp_path / "planted").exists()


@pytest.mark.skipif(not ROOT or judge(read_facts()).container, reason="needs root on a host")
def test_container_containment_asked_for_on_a_host_is_refused_naming_why(tmp_path: Path) -> None:
    # On a shared host, killing every process of the runner would reach other gradings'.
    task = make_task(tmp_path / "t")
    patch = tmp_path / "fix.diff"
    patch.write_text(fix_to("fixed"))
    done = ssegrade(
        "evaluate", "--task", str(task.task), "--patch", str(patch), "--repo", str(task.source),
        "--results", str(task.results), "--containment", "container",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    line = done.stdout.strip()
    assert "\n" not in line
    assert line.startswith(
        "error: Exception: container containment cannot be had: not inside a container "
        "(the host's PID namespace"
    ), line


# ---------------------------------------------------------------------------- SSE_BASELINE


def test_a_recorded_patch_grades_with_sse_baseline_naming_no_baseline(tmp_path: Path) -> None:
    # Every task image sets SSE_BASELINE; regrading a recorded patch there must not need one.
    task = make_task(tmp_path / "t")
    patch = tmp_path / "fix.diff"
    patch.write_text(fix_to("fixed"))
    done = ssegrade(
        "evaluate", "--task", str(task.task), "--patch", str(patch), "--repo", str(task.source),
        "--results", str(task.results), "--containment", "weak",
        env={"SSE_BASELINE": str(tmp_path / "no-baseline-here")},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("passed"), done.stdout + done.stderr
    assert "is ignored: a recorded patch needs no baseline" in done.stderr
