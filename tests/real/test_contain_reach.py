"""Scripts reach nothing of the host's (SPEC §5): not its network, not the credentials in the
evaluator's environment, not more of its memory than `--script-tmp-size` in /tmp and
/dev/shm; a script that fills its /tmp or its working copy's disk fails its own check, and
every other check and grading keeps its verdict.

End to end with the `ssegrade` command on real tasks, as root (scripts as the runner account,
in full containment).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from interpreters.real.runner import probe
from tests.support.processes import unique
from tests.support.realtask import (
    CLI,
    RealTask,
    evaluating,
    fix_to,
    git,
    log_of,
    make_task,
    write_jobs,
)

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.geteuid() != 0 or not probe().namespaces, reason="needs root and full containment"
    ),
]


def fixed_task(root: Path, build: str, run: str | None = None, *, fix: bool = True) -> RealTask:
    """The shell task, with these scripts, and a tree that fixes it (`fix`)."""
    made = make_task(root, pocs=2)
    made.script("build.sh", build)
    if run is not None:
        made.script("run.sh", run)
    if fix:
        made.set_value("fixed")
        git(made.source, "commit", "-qam", "fix")
    return made


def evaluate(made: RealTask, *extra: str, env: dict[str, str] | None = None) -> str:
    """`ssegrade evaluate` of `made`; its verdict line."""
    done = subprocess.run(
        evaluating(made, *extra),
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# ---------------------------------------------------------------------------- network

REACH = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > out.txt
python3 - <<'PY'
import os, socket
try:
    with socket.create_connection(("127.0.0.1", int(os.environ["HOST_PORT"])), timeout=5) as c:
        print("reached", c.recv(64).decode().strip())
except OSError as exc:
    print("unreachable", exc.errno)
PY
awk 'NR > 2 {print "interface", $1}' /proc/net/dev
"""


@pytest.fixture
def host_service() -> Iterator[tuple[int, str]]:
    """A TCP service on the host's loopback (a Ray head, a database): its port and banner."""
    banner = f"host-{secrets.token_hex(4)}"
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            with conn:
                conn.sendall(banner.encode() + b"\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1], banner
    stop.set()
    thread.join()
    server.close()


def test_scripts_see_only_their_loopback_unless_given_the_hosts_network(
    tmp_path: Path, host_service: tuple[int, str]
) -> None:
    port, banner = host_service
    env = {"HOST_PORT": str(port)}
    alone = fixed_task(tmp_path / "alone", REACH)
    assert evaluate(alone, "--script-env", "HOST_PORT", env=env) == "passed\n"
    log = log_of(alone.results, "build")
    assert "network: loopback only (a network namespace of its own)" in log
    assert "unreachable 111" in log  # connection refused: nothing listens on its own loopback
    assert banner not in log
    assert [line for line in log.splitlines() if line.startswith("interface")] == ["interface lo:"]
    host = fixed_task(tmp_path / "host", REACH)
    named = ("--script-env", "HOST_PORT")
    assert evaluate(host, "--script-network", "host", *named, env=env) == "passed\n"
    log = log_of(host.results, "build")
    assert "network: the host's (--script-network host)" in log
    assert f"reached {banner}" in log


# ---------------------------------------------------------------------------- credentials

DUMP = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > out.txt
env
"""
CREDENTIALS = ("OPENAI_API_KEY", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "DB_PASSWORD")


@pytest.mark.parametrize("command", ["evaluate", "batch"])
def test_credentials_stay_out_of_scripts_unless_passed_by_name(
    tmp_path: Path, command: str
) -> None:
    secret = {name: f"{name.lower()}-{secrets.token_hex(8)}" for name in CREDENTIALS}
    made = fixed_task(tmp_path / "t", DUMP, fix=command == "evaluate")
    passed = "GITHUB_TOKEN"
    if command == "evaluate":
        evaluate(made, "--script-env", passed, env=secret)
        results = made.results
    else:
        jobs = write_jobs(tmp_path, made, {"r": fix_to("fixed")})
        results = tmp_path / "results"
        options = ["--workers", "1", "--script-env", passed]
        done = subprocess.run(
            [*CLI, "batch", str(jobs), "--results", str(results), *options],
            env={**os.environ, **secret},
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        (results,) = results.glob("*/*/*/*")
    log = log_of(results, "build")
    header, output = log.split("--- stdout", 1)
    dumped = dict(line.split("=", 1) for line in output.splitlines() if "=" in line)
    assert dumped[passed] == secret[passed]
    for name in CREDENTIALS:
        if name != passed:
            assert name not in dumped
            assert f"{name} (credential)" in header
    everything = "".join(p.read_text(errors="replace") for p in results.rglob("*") if p.is_file())
    for name, value in secret.items():
        assert (value in everything) == (name == passed), name


# ---------------------------------------------------------------------------- size limits

SMALL_TMP = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > /tmp/value && echo shm > /dev/shm/small && echo var > /var/tmp/small
cp /tmp/value out.txt
"""
FILL = """#!/bin/sh
case "$1" in
  *poc1*) dd if=/dev/zero of=/tmp/fill-{t} bs=1M count=64 || exit 1 ;;
  *poc2*) dd if=/dev/zero of=/dev/shm/fill-{t} bs=1M count=64 || exit 1 ;;
esac
test -f out.txt || exit 3
grep -q fixed out.txt || exit 1
"""


def started(made: RealTask, *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        evaluating(made, *extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def verdict(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    return out


def grade(made: RealTask) -> dict[str, object]:
    document: dict[str, object] = json.loads((made.results / "result.json").read_bytes())
    return document


def test_a_script_filling_its_tmp_or_shm_fails_its_own_check_only(tmp_path: Path) -> None:
    token = unique()
    fill = FILL.replace("{t}", token)
    filler = fixed_task(tmp_path / "filler", SMALL_TMP, fill)
    other = fixed_task(tmp_path / "other", SMALL_TMP)  # another grading at the same time
    roomy = fixed_task(tmp_path / "roomy", SMALL_TMP, fill)
    procs = [
        started(filler, "--script-tmp-size", "16M"),
        started(other, "--script-tmp-size", "16M"),
        started(roomy, "--script-tmp-size", "128M"),
    ]
    verdicts = [verdict(proc) for proc in procs]
    assert verdicts[1:] == ["passed\n", "passed\n"]  # as alone: the limit was the cause
    patch = grade(filler)["patch_result"]
    assert isinstance(patch, dict)
    assert patch["status"] == "failed"
    assert (patch["build_success"], patch["pov_passed"], patch["pov_total"]) == (True, 0, 2)
    assert (patch["func_test_success"], patch["intent_test_success"]) == (True, True)
    for poc in (1, 2):
        log = log_of(filler.results, "poc", poc)
        assert "No space left on device" in log
        assert "of 16 MiB each" in log
    assert not Path(f"/tmp/fill-{token}").exists()
    assert not Path(f"/dev/shm/fill-{token}").exists()


HUGE = """#!/bin/sh
. ./lib.sh
echo "$VALUE" > out.txt
dd if=/dev/zero of=huge bs=1M count=256
"""


def test_a_script_filling_its_working_copys_disk_never_gives_a_wrong_verdict(
    tmp_path: Path,
) -> None:
    # There is no quota on the working copy: its disk is the evaluator's temporary folder.
    # Here that is a small file system of the filler's own, mounted in a mount namespace of
    # its own; the other grading's is the host's.
    filler = fixed_task(tmp_path / "filler", HUGE)
    other = fixed_task(tmp_path / "other", SMALL_TMP)
    small = tmp_path / "small-disk"
    small.mkdir()
    small.chmod(0o755)
    mounted = f'mount -t tmpfs -o size=48m,mode=755 tmpfs {small} && exec "$@"'
    in_own_namespace = ["unshare", "--mount", "--propagation", "private", "sh", "-c", mounted]
    full = subprocess.Popen(
        [*in_own_namespace, "-", *evaluating(filler)],
        env={**os.environ, "TMPDIR": str(small)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    beside = started(other)
    assert verdict(beside) == "passed\n"
    said = verdict(full)
    patch = grade(filler)["patch_result"]
    assert isinstance(patch, dict)
    assert patch["status"] in ("failed", "error")
    assert said.startswith(patch["status"])
    assert patch["build_success"] is not True
