"""Contract: grading through a daemon keeps the contract, and writes what grading embedded
writes.

`RemoteGrading` against a real `ssegrade daemon` on a temporary admin socket is held to the
fake world by `ssegrade.testing.check_interpreter`, on every scenario of the contract. Then
each scenario (plus the two time limits) is graded twice from the same task folder, on two
identical source trees changed the same way: once with the local interpreter (`LocalSystem`
under `bencher_interpreter`), once with `RemoteGrading` against a real daemon.
`result.json` and `final.patch` must be byte for byte the same, and the checks must be the
same runs with the same exit codes.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from returns.result import Success

from interpreters.app.setup import Inputs
from interpreters.cli.daemon import evaluate_through_daemon
from interpreters.daemon.client import DaemonClient
from interpreters.daemon.remote import RemoteGrading
from interpreters.real import git as realgit
from interpreters.real.local import LocalSystem, Places
from interpreters.real.resultsfolder.writer import ResultsWriter
from interpreters.real.runner import resolve_runner
from interpreters.real.taskfolder import load_task
from ssegrade import (
    BenchSession,
    Deadline,
    GradeOptions,
    RuntimeResult,
    Task,
    bencher_interpreter,
    grade,
    run,
)
from ssegrade.testing import SCENARIOS, Grading, Scenario, check_interpreter
from tests.support.daemons import TOP, RunningDaemon, running_daemon, start_daemon
from tests.support.realtask import RealTask, make_task, scenario_scripts, ssegrade

pytestmark = pytest.mark.slow

HANGS = "#!/bin/sh\necho started\nsleep 60\n"


@dataclass(frozen=True)
class Case:
    """A scenario with the evaluation's limits; `hang` names a script that sleeps past them."""

    scenario: Scenario
    timeout: int = 120
    script_timeout: int | None = None
    hang: str | None = None


CASES = [Case(s) for s in SCENARIOS] + [
    # Long enough for the capture to finish on a busy host (its final.patch is compared), short
    # enough that the hanging build meets it.
    Case(Scenario("overall time limit"), timeout=10, hang="build.sh"),
    Case(Scenario("script time limit"), script_timeout=1, hang="test.sh"),
]


def _scripts(made: RealTask, case: Case) -> None:
    scenario_scripts(made, case.scenario)
    if case.hang is not None:
        made.script(case.hang, HANGS)


def _embedded(made: RealTask, task: Task, timeout: int, script_timeout: int | None) -> None:
    base = realgit.load_baseline(made.baseline).unwrap()
    scratch = Path(tempfile.mkdtemp(prefix="ssegrade-embedded-"))
    try:
        scratch.chmod(0o711)
        repo = scratch / "repo"
        assert isinstance(realgit.checkout_baseline(base, repo), Success)
        places = Places(
            task=made.task,
            source=made.source,
            baseline=base,
            repo=repo,
            results=made.results,
            scratch=scratch / "work",
        )
        deadline = Deadline.starting(timeout, time.monotonic)
        system = LocalSystem(
            places,
            resolve_runner(None).unwrap(),
            deadline=deadline,
            script_timeout=script_timeout,
        )
        session = BenchSession(task=task, folder=str(made.task))
        options = GradeOptions(task=task, folder=str(made.task))
        run(grade(options), bencher_interpreter(session, system, deadline), deadline)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _checks(results: Path) -> list[tuple[object, ...]]:
    lines = (
        (results / "checks.jsonl").read_text().splitlines()
        if (results / "checks.jsonl").exists()
        else []
    )
    return [
        tuple(doc[key] for key in ("name", "poc", "exit_code", "killed", "passed"))
        for doc in map(json.loads, lines)
    ]


def _twins(workdir: Path, case: Case) -> tuple[RealTask, Path, Task]:
    """The task, its source tree (baseline recorded) and a copy of the tree for the daemon."""
    made = make_task(workdir, pocs=case.scenario.pocs)
    _scripts(made, case)
    task = load_task(made.task).unwrap()
    twin = workdir / "daemon-source"
    shutil.copytree(made.source, twin, symlinks=True)
    assert isinstance(realgit.record_baseline(made.source, made.baseline), Success)
    return made, twin, task


@dataclass
class Prepared:
    """One case ready to grade: its task, both trees, and a daemon on the twin."""

    made: RealTask
    twin: Path
    task: Task
    daemon: RunningDaemon

    @property
    def remote_results(self) -> Path:
        return self.made.root / "daemon-results"


def _prepare(root: Path, cases: list[Case]) -> dict[str, Prepared]:
    """Start every case's daemon (at level 4: the admin socket is never gated)."""
    prepared: dict[str, Prepared] = {}
    for index, case in enumerate(cases):
        made, twin, task = _twins(root / str(index), case)
        daemon = start_daemon(made.task, twin, made.root / "daemon-results", level="4", wait=False)
        prepared[case.scenario.name] = Prepared(made, twin, task, daemon)
    for each in prepared.values():
        each.daemon.wait_ready()
    return prepared


@pytest.fixture(scope="module")
def cases() -> Iterator[dict[str, Prepared]]:
    """Every case's trees and daemon, the daemons started together (their start-ups overlap)."""
    with tempfile.TemporaryDirectory(prefix="ssegrade-daemon-contract-") as folder:
        root = Path(folder)
        root.chmod(0o755)
        prepared: dict[str, Prepared] = {}
        try:
            prepared = _prepare(root, CASES)
            yield prepared
        finally:
            for each in prepared.values():  # all stop together
                each.daemon.ask_to_stop()
            for each in prepared.values():
                each.daemon.cleanup()


@pytest.fixture
def workdir() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="ssegrade-daemon-contract-") as folder:
        Path(folder).chmod(0o755)
        yield Path(folder)


def _change(made: RealTask, twin: Path, scenario: Scenario) -> None:
    if scenario.changed:
        made.set_value("fixed")
        (twin / "lib.sh").write_text("VALUE=fixed\n")


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_the_daemon_backed_interpreter_keeps_the_contract(
    scenario: Scenario, workdir: Path
) -> None:
    @contextmanager
    def through_daemon(scenario: Scenario) -> Iterator[Grading]:
        made = make_task(workdir, pocs=scenario.pocs)
        scenario_scripts(made, scenario)
        task = load_task(made.task).unwrap()
        with running_daemon(
            made.task, made.source, workdir / "daemon-results", level="4"
        ) as daemon:
            if scenario.changed:
                made.set_value("fixed")
            (made.results / "logs").mkdir(parents=True)
            deadline = Deadline.starting(120, time.monotonic)
            writer = ResultsWriter(made.source, made.results, check=deadline.check)
            options = GradeOptions(task=task, folder=str(made.task))
            with DaemonClient(daemon.admin) as client:
                yield Grading(RemoteGrading(client, writer, deadline), options, deadline)
        assert (made.results / "result.json").is_file()

    check_interpreter(through_daemon, [scenario])


@pytest.mark.parametrize("case", CASES, ids=[c.scenario.name for c in CASES])
def test_embedded_and_daemon_grades_are_identical(case: Case, cases: dict[str, Prepared]) -> None:
    ready = cases[case.scenario.name]
    made, twin, task, remote_results = ready.made, ready.twin, ready.task, ready.remote_results
    _change(made, twin, case.scenario)
    _embedded(made, task, case.timeout, case.script_timeout)
    runner = resolve_runner(None).unwrap()
    evaluate_through_daemon(
        ready.daemon.admin,
        Inputs(task, made.task, twin, runner),
        remote_results,
        timeout=case.timeout,
        script_timeout=case.script_timeout,
        runtime=RuntimeResult(),
    )
    embedded = (made.results / "result.json").read_bytes()
    remote = (remote_results / "result.json").read_bytes()
    assert json.loads(remote) == json.loads(embedded)  # the readable difference first
    assert remote == embedded
    assert (remote_results / "final.patch").read_bytes() == (
        made.results / "final.patch"
    ).read_bytes()
    assert (remote_results / "commits.log").read_bytes() == (
        made.results / "commits.log"
    ).read_bytes()
    remote_checks, embedded_checks = _checks(remote_results), _checks(made.results)
    if case.hang == "build.sh":
        # A 3 s limit may run out during the patch's preparation on one side and just after
        # it on the other (a loaded host): the grades above are equal; the prepare record is
        # whether the limit came before or after it.
        remote_checks = [c for c in remote_checks if c[0] != "prepare"]
        embedded_checks = [c for c in embedded_checks if c[0] != "prepare"]
    assert remote_checks == embedded_checks
    for results in (remote_results, made.results):
        archived = results / "source.tar.gz"
        if case.hang != "build.sh":
            assert archived.exists()
        elif archived.exists():  # the limit covers the archive too: whole, or absent
            subprocess.run(["gzip", "-t", str(archived)], check=True)
    patch_result = json.loads(embedded)["patch_result"]
    if case.hang == "build.sh":
        assert patch_result["error_msg"] == f"Timeout ({case.timeout}s)"
    if case.hang == "test.sh":
        assert (patch_result["func_test_success"], patch_result["status"]) == (False, "failed")


def test_evaluate_command_with_daemon(workdir: Path) -> None:
    """`ssegrade evaluate --daemon ADMIN_SOCKET` writes the same documents as without it."""
    scenario = next(s for s in SCENARIOS if s.name == "second poc triggers")
    made, twin, _ = _twins(workdir, Case(scenario))
    remote_results = workdir / "daemon-results"
    with running_daemon(made.task, twin, remote_results) as daemon:
        _change(made, twin, scenario)
        local = ssegrade(
            "evaluate",
            "--task",
            str(made.task),
            "--source",
            str(made.source),
            "--baseline",
            str(made.baseline),
            "--results",
            str(made.results),
        )
        remote = ssegrade(
            "evaluate",
            "--task",
            str(made.task),
            "--source",
            str(twin),
            "--results",
            str(remote_results),
            "--daemon",
            str(daemon.admin),
        )
        wrong = ssegrade(
            "evaluate",
            "--task",
            str(made.task),
            "--source",
            str(twin),
            "--results",
            str(workdir / "elsewhere"),
            "--daemon",
            str(daemon.agent),
        )
    assert local.returncode == remote.returncode == 0, (local.stderr, remote.stderr)
    assert remote.stdout == local.stdout == f"failed: PoC failed: {made.task}/pocs/poc2.bin\n"
    assert (remote_results / "result.json").read_bytes() == (
        made.results / "result.json"
    ).read_bytes()
    assert (remote_results / "final.patch").read_bytes() == (
        made.results / "final.patch"
    ).read_bytes()
    assert "poc" in remote.stderr
    assert wrong.returncode == 2
    assert wrong.stderr.strip().splitlines() == [
        f"ssegrade: error: {daemon.agent} is an agent-facing socket: grading needs the admin socket"
    ]
    assert not (workdir / "elsewhere" / "result.json").exists()


def test_evaluate_with_a_missing_daemon_is_bad_input(workdir: Path) -> None:
    made = make_task(workdir)
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "from interpreters.cli.main import main; main()",
            "evaluate",
            "--task",
            str(made.task),
            "--source",
            str(made.source),
            "--results",
            str(made.results),
            "--daemon",
            str(workdir / "nothing.sock"),
        ],
        cwd=TOP,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("ssegrade: error: GET /project: cannot reach the daemon at")
