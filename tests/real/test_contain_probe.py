"""Containment is decided once, correctly, and recorded (SPEC §5 "Containment").

The attacks: many ssegrade processes probing at once (a fixed probe name made the losers run
every script weakly contained); leftover cgroups of gradings killed with -9; a host where a
part of `full` is missing (simulated in a mount namespace of the test's own: the pids cgroup
made read-only, a tool hidden under /dev/null), where grading must stop rather than run
weaker. Real processes, real cgroups; the decision itself as a property.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from interpreters.real.runner import ContainmentPolicy, ContainmentRefused, probe
from interpreters.real.runner import cgroups as cgroup_module
from interpreters.real.runner.cgroups import Cgroups, make_group
from interpreters.real.runner.guardian import group_owner, owner_tag
from interpreters.real.runner.probe import Offer, decide
from tests.support.processes import unique
from tests.support.realtask import RealTask, fix_to, git, make_task, ssegrade, write_jobs
from tests.support.waiting import wait_until

ROOT = os.geteuid() == 0
CGROUPS = probe().cgroups if ROOT else None
needs_cgroups = pytest.mark.skipif(CGROUPS is None, reason="needs root and a pids cgroup")
PY = [sys.executable, "-c"]
CLI = [*PY, "from interpreters.cli.main import main; main()"]


# ---------------------------------------------------------------------------- the probe's race

PROBE_AT_GATE = """
import sys
from interpreters.real.runner import probe
print("ready", flush=True)
sys.stdin.readline()
offer = probe()
print(offer.namespaces, offer.describe(), flush=True)
"""


@needs_cgroups
@pytest.mark.slow
def test_processes_probing_at_once_all_get_full_containment() -> None:
    procs = [
        subprocess.Popen(
            [*PY, PROBE_AT_GATE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(8)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline() == "ready\n"
        for proc in procs:  # the gate opens for all of them at once
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        said = [proc.communicate(timeout=120) for proc in procs]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert [out for out, _ in said] == ["True \n"] * len(procs), said


@pytest.fixture
def own_groups() -> Iterator[list[Path]]:
    """Cgroups a test makes, removed after it."""
    made: list[Path] = []
    yield made
    for group in made:
        if group.exists():
            group.rmdir()


@needs_cgroups
def test_a_taken_name_is_tried_again_and_a_refusal_is_the_kernels(
    monkeypatch: pytest.MonkeyPatch, own_groups: list[Path]
) -> None:
    assert CGROUPS is not None
    parent = CGROUPS.parents["pids"]
    first, second = f"taken{secrets.token_hex(4)}", f"free{secrets.token_hex(4)}"
    taken = parent / f"ssegrade-{owner_tag()}-{first}"
    taken.mkdir()  # another process won the race for this name
    own_groups.append(taken)
    said = iter([first, second])
    monkeypatch.setattr(cgroup_module, "_token", lambda: next(said))
    group = make_group(parent)
    own_groups.append(group)
    assert group.parent == parent
    assert group.name.startswith(f"ssegrade-{owner_tag()}-free")
    # Every name taken: said as such, after a bounded number of tries.
    monkeypatch.setattr(cgroup_module, "_token", lambda: first)
    with pytest.raises(OSError, match="no free cgroup name") as taken_all:
        make_group(parent)
    assert taken_all.value.errno == errno.EEXIST
    # The kernel refusing is not a name taken: raised at once, with the kernel's reason.
    with pytest.raises(FileNotFoundError) as refused:
        make_group(parent / f"missing-{secrets.token_hex(4)}")
    assert refused.value.errno == errno.ENOENT


@needs_cgroups
@pytest.mark.slow
def test_group_names_are_per_process_and_per_attempt(own_groups: list[Path]) -> None:
    assert CGROUPS is not None
    parent = CGROUPS.parents["pids"]
    ours = [make_group(parent) for _ in range(3)]
    own_groups.extend(ours)
    theirs = subprocess.run(
        [
            *PY,
            "from pathlib import Path; from interpreters.real.runner.cgroups import make_group; "
            "from interpreters.real.runner.guardian import owner_tag; "
            f"g = make_group(Path({str(parent)!r})); print(g.name, owner_tag()); g.rmdir()",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert len({group.name for group in ours}) == 3
    assert {group_owner(group.name) for group in ours} == {owner_tag()}
    assert group_owner(theirs[0]) == theirs[1] != owner_tag()


MADE_THEN_KILLED = """
import sys, time
from pathlib import Path
from interpreters.real.runner.cgroups import make_group
print(make_group(Path(sys.argv[1])), flush=True)
time.sleep(300)
"""


@needs_cgroups
@pytest.mark.slow
def test_a_process_killed_right_after_making_a_group_leaves_none(own_groups: list[Path]) -> None:
    # The probe makes trial groups before the first scratch folder: a kill -9 at that instant
    # must not leave one until the next probe (the guardian is started before any group).
    assert CGROUPS is not None
    proc = subprocess.Popen(
        [*PY, MADE_THEN_KILLED, str(CGROUPS.parents["pids"])],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    assert proc.stdout is not None
    with proc.stdout:
        group = Path(proc.stdout.readline().decode().strip())
    own_groups.append(group)
    assert group.is_dir()
    proc.kill()
    proc.wait()
    wait_until(lambda: not group.exists(), "the killed process's group to go", timeout=2)


# ---------------------------------------------------------------------------- leftovers


def _sleeper(token: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sleep", "300", f"0.{token}"], start_new_session=True)


def _dead_tag() -> str:
    """The owner tag of a process that lived and is dead now (its pid may be reused: its
    start time is not)."""
    proc = subprocess.Popen(["sleep", "300"])
    tag = owner_tag(proc.pid)
    proc.kill()
    proc.wait()
    return tag


@needs_cgroups
@pytest.mark.slow
def test_cgroups_of_dead_gradings_are_emptied_and_removed_at_start_and_live_ones_kept(
    own_groups: list[Path],
) -> None:
    assert CGROUPS is not None
    parent = CGROUPS.parents["pids"]
    token = unique()
    owner = _sleeper(token)  # a live grading
    ns, pid, start = owner_tag(owner.pid).split("-")
    tags = {
        "dead": _dead_tag(),  # a grading killed with -9 while its script ran
        "live": owner_tag(owner.pid),
        "elsewhere": f"{int(ns) + 1}-{pid}-{start}",  # another PID namespace's: not ours to tell
    }
    members: dict[str, subprocess.Popen[bytes]] = {}
    groups: dict[str, Path] = {}
    try:
        for name, tag in tags.items():
            groups[name] = parent / f"ssegrade-{tag}-{token}"
            groups[name].mkdir()
            own_groups.append(groups[name])
            members[name] = _sleeper(token)
            (groups[name] / "cgroup.procs").write_text(str(members[name].pid))
        started = subprocess.run(
            [*PY, "from interpreters.real.runner import probe; probe()"], check=True, timeout=120
        )
        assert started.returncode == 0
        assert members["dead"].wait(timeout=10) == -9
        assert not groups["dead"].exists()
        for name in ("live", "elsewhere"):
            assert members[name].poll() is None
            assert (groups[name] / "cgroup.procs").read_text().split() == [str(members[name].pid)]
    finally:
        for proc in (owner, *members.values()):
            proc.kill()
            proc.wait()


# ---------------------------------------------------------------------------- the decision

MECHANISMS = [
    "PID namespace",
    "private /tmp, /var/tmp and /dev/shm",
    "network namespace",
    "pids cgroup",
    "util-linux unshare",
]
TOOLS = {"unshare": "/bin/unshare", "timeout": "/bin/timeout", "setpriv": "/bin/setpriv"}


@given(
    root=st.booleans(),
    missing=st.dictionaries(st.sampled_from(MECHANISMS), st.text(min_size=1, max_size=30)),
    mode=st.sampled_from([None, "full", "weak"]),
    network=st.sampled_from(["loopback", "host"]),
)
def test_full_is_had_whole_or_refused_in_one_line_and_weak_only_when_chosen(
    root: bool, missing: dict[str, str], mode: str | None, network: str
) -> None:
    offer = Offer(root, TOOLS if root else {}, Cgroups(1, {}) if root else None, missing)
    policy = ContainmentPolicy(mode, network)  # type: ignore[arg-type]
    needed = {name for name in missing if not (name == "network namespace" and network == "host")}
    wants_full = mode == "full" or (mode is None and root)
    if not wants_full:
        got = decide(offer, policy)
        assert got.mode == "weak"
        assert got.weaker == ("chosen with --containment weak" if root else "not root")
        assert got.describe().startswith(f"containment: weak ({got.weaker})")
        return
    if not root or needed:
        with pytest.raises(ContainmentRefused) as refused:
            decide(offer, policy)
        line = str(refused.value)
        assert len(line.splitlines()) == 1
        assert ("needs root" in line) if not root else all(f"no {n} (" in line for n in needed)
        assert "--containment weak" in line
        return
    got = decide(offer, policy)
    assert (got.mode, got.network, got.unshare) == ("full", network, TOOLS["unshare"])


# ---------------------------------------------------------------------------- a part missing


def without(parts: Sequence[str], argv: Sequence[str]) -> list[str]:
    """`argv` run in a mount namespace of its own in which each of `parts` is unusable: a
    cgroup hierarchy unmounted, a folder made read-only, a file (a tool) covered by
    /dev/null."""
    steps = []
    for part in parts:
        if part.startswith("/sys/fs/cgroup/"):  # read-only, ssegrade would clone it writable
            steps.append(f"umount {part}")
        elif Path(part).is_dir():
            steps.append(f"mount --bind -o ro {part} {part} && mount -o remount,bind,ro {part}")
        else:
            steps.append(f"mount --bind /dev/null {part}")
    script = " && ".join([*steps, 'exec "$@"'])
    return ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "-", *argv]


@pytest.fixture
def fixed_task(tmp_path: Path) -> RealTask:
    made = make_task(tmp_path / "t")
    made.set_value("fixed")
    git(made.source, "commit", "-qam", "fix")
    return made


def _evaluate(made: RealTask, results: Path, parts: Sequence[str], *extra: str) -> str:
    args = ["evaluate", "--task", str(made.task), "--source", str(made.source)]
    done = subprocess.run(
        without(parts, [*CLI, *args, "--results", str(results), *extra]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    return done.stdout


MISSING = {
    "pids cgroup": (["/sys/fs/cgroup/pids"], "no pids cgroup ("),
    "unshare": (["/usr/bin/unshare"], "no util-linux unshare (not installed)"),
}


@needs_cgroups
@pytest.mark.slow
@pytest.mark.parametrize("asked", [[], ["--containment", "full"]], ids=["default", "full"])
@pytest.mark.parametrize("part", sorted(MISSING))
def test_evaluate_stops_with_error_naming_what_full_lacks(
    fixed_task: RealTask, tmp_path: Path, part: str, asked: list[str]
) -> None:
    hidden, named = MISSING[part]
    verdict = _evaluate(fixed_task, tmp_path / "results", hidden, *asked)
    grade = json.loads((tmp_path / "results" / "result.json").read_bytes())["patch_result"]
    assert grade["status"] == "error"
    assert named in grade["error_msg"]
    assert "\n" not in grade["error_msg"]
    assert verdict.startswith(f"error: Exception: full containment cannot be had: {named}")
    records = (tmp_path / "results" / "checks.jsonl").read_text().splitlines()
    ran = [json.loads(line) for line in records if json.loads(line)["containment"]]
    assert ran == []  # no script ran weaker than asked


@needs_cgroups
@pytest.mark.slow
def test_a_read_only_pids_cgroup_mount_is_made_writable_for_ssegrade_alone(
    fixed_task: RealTask, tmp_path: Path
) -> None:
    # As a container engine mounts it: before, full containment was refused for it.
    results = tmp_path / "results"
    folder = "/sys/fs/cgroup/pids"
    ro = f"mount --bind -o ro {folder} {folder} && mount -o remount,bind,ro {folder}"
    argv = [
        *CLI, "evaluate", "--task", str(fixed_task.task), "--source", str(fixed_task.source),
        "--results", str(results),
    ]  # fmt: skip
    script = f'{ro} && "$@"; echo; grep -c " {folder} ro," /proc/self/mountinfo'
    done = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", script, "-", *argv],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.stdout.startswith("passed"), done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "1"  # the mount itself stays read-only
    records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
    assert {record["containment"] for record in records} - {None} == {"full"}


@needs_cgroups
@pytest.mark.slow
def test_weak_is_chosen_explicitly_and_recorded_in_every_log_and_check(
    fixed_task: RealTask, tmp_path: Path
) -> None:
    results = tmp_path / "results"
    verdict = _evaluate(fixed_task, results, MISSING["pids cgroup"][0], "--containment", "weak")
    assert verdict == "passed\n"
    records = [json.loads(line) for line in (results / "checks.jsonl").read_text().splitlines()]
    scripts = [record for record in records if record["name"] not in ("prepare", "guard")]
    assert len(scripts) == 5
    assert {record["containment"] for record in scripts} == {"weak"}
    for record in scripts:
        log = Path(record["log_file"]).read_text()
        assert "containment: weak (chosen with --containment weak)" in log
        assert "network: the host's (weak containment)" in log


@needs_cgroups
@pytest.mark.slow
def test_batch_refuses_full_it_cannot_have_and_records_weak_in_summaries_and_report(
    tmp_path: Path,
) -> None:
    made = make_task(tmp_path / "t")
    jobs = write_jobs(tmp_path, made, {"fix": fix_to("fixed")})
    results = tmp_path / "results"
    hidden = MISSING["pids cgroup"][0]
    refused = subprocess.run(
        without(hidden, [*CLI, "batch", str(jobs), "--results", str(results), "--workers", "1"]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert MISSING["pids cgroup"][1] in refused.stderr
    weak = ["--workers", "1", "--containment", "weak"]
    graded = subprocess.run(
        without(hidden, [*CLI, "batch", str(jobs), "--results", str(results), *weak]),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert graded.returncode == 0, graded.stderr
    (summary,) = results.glob("*/*/*/*/summary.json")
    assert json.loads(summary.read_bytes())["containment"] == "weak"
    report = ssegrade("report", str(results))
    assert report.returncode == 0, report.stderr
    assert "Containment of the runs' scripts: 1 weak." in " ".join(report.stdout.split())
