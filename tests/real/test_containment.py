"""Containment of script runs (SPEC §5): whatever a script starts dies with it, its /tmp and
/dev/shm are its own, its cgroup limits it, and no process outside it is ever signalled.

Real processes as the runner account; these need root and a kernel that grants namespaces.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.files import remove_tree
from interpreters.real.runner import ContainmentPolicy, Runner, probe, resolve_runner, run_script
from ssegrade.internal.effects import ScriptResult
from tests.support.processes import TEST_RUNNER, live_with, unique, write_script

CONTAINED = os.geteuid() == 0 and probe().namespaces
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not CONTAINED, reason="needs root and namespaces"),
]


@pytest.fixture(scope="module")
def runner() -> Runner:
    """The tests' runner account."""
    return resolve_runner(None, default=TEST_RUNNER).unwrap()


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder under /tmp (as scratch folders often are), which the runner can enter."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-contain-"))
    folder.chmod(0o755)
    yield folder
    remove_tree(folder)


@pytest.fixture
def outside(runner: Runner) -> Iterator[subprocess.Popen[bytes]]:
    """A process of the runner's uid started outside any script: another grading's, say."""
    proc = subprocess.Popen(
        ["sleep", "120"],
        user=runner.uid,
        group=runner.gid,
        extra_groups=[],
        env={"PATH": "/usr/bin:/bin"},
        start_new_session=True,
    )
    yield proc
    proc.kill()
    proc.wait()


def contained(
    runner: Runner, work: Path, body: str, *, limit: float = 20, **options: object
) -> ScriptResult:
    script = write_script(work, body)
    return run_script(
        runner,
        [str(script)],
        work,
        home=work / "home",
        limit=limit,
        log_path=work / "logs" / "run.log",
        label="run",
        spool=work,
        **options,  # type: ignore[arg-type]
    )


def test_the_probe_runs_once_per_process() -> None:
    assert probe() is probe()
    assert probe().namespaces
    assert probe().describe() == ""


ESCAPES = {
    "double-fork": "sh -c 'sh -c \"sleep 300 0.{t}\" &' &",
    "setsid": "setsid sleep 300 0.{t} &",
    "nohup": "nohup sleep 300 0.{t} >/dev/null 2>&1 &",
    "daemon": "setsid sh -c 'trap \"\" HUP TERM INT; exec sleep 300 0.{t}' </dev/null >/dev/null &",
    "fork-loop": "sh -c 'while :; do sleep 300 0.{t} & sleep 0.05; done' &",
}


@pytest.mark.parametrize("ending", ["exit 0", "exit 1", "sleep 100"], ids=["pass", "fail", "limit"])
@pytest.mark.parametrize("escape", sorted(ESCAPES))
def test_nothing_a_script_starts_outlives_it(
    runner: Runner,
    work: Path,
    outside: subprocess.Popen[bytes],
    escape: str,
    ending: str,
) -> None:
    token = unique()
    body = (
        f"#!/bin/sh\n{ESCAPES[escape].format(t=token)}\n"
        f"until pgrep -f 0.{token} >/dev/null; do sleep 0.02; done\n"
        f"echo started\n{ending}\n"
    )
    result = contained(runner, work, body, limit=2)
    assert result.stdout == "started\n"
    assert result.killed == (ending == "sleep 100")
    assert not live_with(token)
    assert outside.poll() is None


def test_tmp_and_shm_are_the_scripts_own_and_the_given_paths_stay_reachable(
    runner: Runner, work: Path, outside: subprocess.Popen[bytes]
) -> None:
    token = unique()
    elsewhere = Path(tempfile.mkdtemp(prefix="ssegrade-other-"))  # another grading's scratch
    staged = work / "stage-1" / "1" / "pocs"
    staged.mkdir(parents=True)
    (staged / "poc.bin").write_text("poc\n")
    (staged / "go.mod").write_text("module poc\n")
    support = Path(tempfile.mkdtemp(prefix="ssegrade-support-"))
    (support / "harness.sh").write_text("echo harness\n")
    support.chmod(0o755)
    for folder in (work / "stage-1", work / "stage-1" / "1", staged):
        folder.chmod(0o755)
    os.chown(work, runner.uid, runner.gid)  # the workspace copy is the runner's
    body = f"""#!/bin/sh
touch /tmp/left-{token} /dev/shm/left-{token} || exit 9
echo made > "$PWD/made-here"
echo kept > "$HOME/kept"
cat "$1" "$(dirname "$1")/go.mod"
sh {support}/harness.sh
test -e {elsewhere} && echo "sees another grading's scratch"
ls -A /tmp | grep -v -e left- -e {work.name} -e {support.name} | grep . && echo "more in /tmp"
echo done
"""
    try:
        script = write_script(work, body)
        result = run_script(
            runner,
            [str(script), str(staged / "poc.bin")],
            work,
            home=work / "home",
            limit=20,
            log_path=work / "logs" / "run.log",
            label="run",
            keep=[support],
        )
        assert result.stdout == "poc\nmodule poc\nharness\ndone\n", result.stderr
        assert (work / "made-here").read_text() == "made\n"
        assert (work / "home" / "kept").read_text() == "kept\n"
        assert not Path(f"/tmp/left-{token}").exists()
        assert not Path(f"/dev/shm/left-{token}").exists()
        assert outside.poll() is None
    finally:
        remove_tree(elsewhere)
        remove_tree(support)


def test_a_fork_bomb_stops_at_the_pids_limit(
    runner: Runner, work: Path, outside: subprocess.Popen[bytes]
) -> None:
    token = unique()
    bomb = (
        "import os, time\n"
        "made = refused = 0\n"
        "for _ in range(200):\n"
        "    try:\n"
        "        if os.fork() == 0:\n"
        "            time.sleep(300)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    except OSError:\n"
        "        refused += 1\n"
        "print(made, refused)\n"
    )
    (work / "bomb.py").write_text(bomb)
    body = f"#!/bin/sh\nexec python3 {work / 'bomb.py'} 0.{token}\n"
    result = contained(runner, work, body, pids=50)
    made, refused = map(int, result.stdout.split())
    assert made + refused == 200
    assert 0 < made < 50
    assert not live_with(token)
    assert outside.poll() is None


def test_a_memory_limit_is_applied(runner: Runner, work: Path) -> None:
    grab = "#!/bin/sh\nexec python3 -c 'b = bytearray({size} << 20); print(len(b) >> 20)'\n"
    small = contained(runner, work, grab.format(size=8), memory=128 << 20)
    assert small.stdout == "8\n", small.stderr
    big = contained(runner, work, grab.format(size=512), memory=128 << 20)
    assert not big.passed
    assert big.stdout == ""


def test_the_run_cgroup_is_removed_afterwards(runner: Runner, work: Path) -> None:
    if probe().cgroups is None:
        pytest.skip("no cgroup can be made here")
    result = contained(runner, work, "#!/bin/sh\ngrep -m1 -E ':pids:|^0::' /proc/self/cgroup\n")
    path = result.stdout.strip().split(":", 2)[2]
    assert "ssegrade-" in path
    cgroups = probe().cgroups
    assert cgroups is not None
    mount = "/sys/fs/cgroup/pids" if cgroups.version == 1 else "/sys/fs/cgroup"
    assert not Path(mount + path).exists()
    assert "cgroup v" in Path(str(result.log_file)).read_text()


def test_the_script_is_not_init_of_its_namespace(runner: Runner, work: Path) -> None:
    # As init a script would ignore its own fatal signals; it runs under `timeout` instead.
    result = contained(runner, work, "#!/bin/sh\necho $$\nkill -TERM $$\necho survived\n")
    assert result.stdout == "2\n"
    assert result.code == 128 + 15


def test_the_weaker_containment_says_so(runner: Runner, work: Path) -> None:
    weak = ContainmentPolicy(mode="weak")
    result = contained(runner, work, "#!/bin/sh\ntrue\n", containment=weak)
    log = Path(str(result.log_file)).read_text()
    assert "containment: weak (chosen with --containment weak)" in log
    assert "/tmp, /var/tmp, /dev/shm and the network are shared" in log
    assert result.containment == "weak"
