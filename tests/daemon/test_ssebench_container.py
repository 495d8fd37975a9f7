"""SSEBench's own flow in a real container with the engine's default capabilities.

A task image laid out as SSEBench lays one out (the task at `/ssebench`, root's alone; the
project at `/src/kvconf`, the agent's, as one commit; the toolchain in `ENV`; the accounts
`model` and `sse-runner`; the results folder's parent root-only), with ssegrade installed in it
and the drop-ins in the places of SSEBench's daemon (`/ssebench/ssebench-daemon`) and evaluator
(`/evaluator/main.py`). It runs as SSEBench's runner runs it: no capability added, the run
folder (made on the host with an empty `result.json` and `archive/`, the host user's) mounted
at `/var/lib/ssebench/results`, its archive at `SSE_ARCHIVE`. Its entry point takes the steps
of SSEBench's entrypoint: results and log files, the daemon, the agent as `model` (it edits the
source and builds through the agent socket), `/admin/agent_exited`, then the evaluator. The
grade lands in the very `result.json` the host made, and matches the same patch graded on the
host, field by field.

`docs/container/Dockerfile` is built and run as `docs/operators.md` says, with Docker when a
Docker engine answers (none here: one skip line).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import containerkit
from tests.support.exampletasks import EXAMPLES, lay_out
from tests.support.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HOST_USER = 1000
"""Who ran SSEBench's runner on the host: the run folder and its empty `result.json` are his."""

CONTAINERFILE = """FROM {base}
COPY ssegrade /opt/ssegrade
COPY task /ssebench
COPY project /src/kvconf
COPY toolchain /opt/kvc
COPY ssebench-daemon /ssebench/ssebench-daemon
COPY main.py /evaluator/main.py
COPY entrypoint.sh /usr/local/bin/entrypoint.sh
COPY sse-call /usr/local/bin/sse-call
RUN ln -s /opt/ssegrade/ssegrade /usr/local/bin/ssegrade \\
 && groupadd -g 1000 model \\
 && useradd -u 1000 -g 1000 -M -d /home/model -s /bin/bash model \\
 && mkdir -p /home/model && chown model:model /home/model \\
 && useradd --system --user-group --no-create-home --home-dir /nonexistent \\
        --shell /usr/sbin/nologin sse-runner \\
 && install -d -m 0700 /var/lib/ssebench \\
 && chmod 0755 /ssebench/ssebench-daemon /usr/local/bin/entrypoint.sh /usr/local/bin/sse-call \\
 && chmod 0700 /ssebench \\
 && chown -R model:model /src/kvconf \\
 && su model -c "cd /src/kvconf && git init -q -b main && git add -A \\
        && git -c user.name=task -c user.email=task@example.invalid commit -q -m 'buggy commit'"
ENV KVC_HOME=/opt/kvc
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
"""
"""The task image: SSEBench's case image layout, ssegrade and the drop-ins installed."""

ENTRYPOINT = """#!/bin/sh
# The steps of SSEBench's entrypoint (sandbox mode), in its order; the agent command is "$*".
R="${SSE_RESULTS:-/var/lib/ssebench/results}"
mkdir -p "$R" && chown 0:0 "$(dirname "$R")" && chmod 700 "$(dirname "$R")" && chmod 755 "$R"
export SSE_RESULTS="$R"
for name in daemon mcp agent evaluator opencode; do : >> "$R/$name.log"; done
mkdir -p "$SSE_ARCHIVE" && chown model:model "$SSE_ARCHIVE"
export SSE_DAEMON_SOCKET=/tmp/sse.sock SSE_ADMIN_SOCKET=/run/ssebench/admin.sock
mkdir -p -m 700 /run/ssebench
/ssebench/ssebench-daemon >> "$R/daemon.log" 2>&1 &
daemon=$!
for i in $(seq 600); do
    [ -S "$SSE_DAEMON_SOCKET" ] && break; kill -0 $daemon || exit 1; sleep 0.1
done
start=$(date +%s)
su -p -s /bin/bash model -c "$*" >> "$R/agent.log" 2>&1
status=$?
sse-call "$SSE_ADMIN_SOCKET" POST /admin/agent_exited '{}' >> "$R/daemon.log"
(cd /evaluator && SSE_DAEMON_SOCKET="$SSE_ADMIN_SOCKET" AGENT_EXIT_STATUS=$status \\
    AGENT_DURATION=$(( $(date +%s) - start )) python3 main.py >> "$R/evaluator.log" 2>&1)
graded=$?
kill $daemon; wait $daemon
echo "evaluator exit $graded"
exit $status
"""

SSE_CALL = '''#!/usr/bin/python3
"""sse-call SOCKET METHOD PATH [BODY]: one HTTP request over a Unix socket; prints the status
and the reply's body on one line."""
import http.client
import socket
import sys


class Unix(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=300)
        self.unix = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.unix)


where, method, path = sys.argv[1:4]
body = sys.argv[4] if len(sys.argv) > 4 else None
connection = Unix(where)
connection.request(method, path, body, {"Content-Type": "application/json"})
reply = connection.getresponse()
print(reply.status, reply.read().decode())
'''
"""A client of the daemon's sockets, as curl --unix-socket would be (the image has no curl)."""

AGENT = """set -u
echo "agent: $(id -un)"
git -C /src/kvconf apply /in/agent.diff && echo "agent: applied"
echo "agent build: $(sse-call "$SSE_DAEMON_SOCKET" POST '/tool/bencher?action=build' '{}')"
echo "agent reference: $(sse-call "$SSE_DAEMON_SOCKET" GET /reference/patch)"
sse-call /run/ssebench/admin.sock GET /version 2>&1 | tail -n 1 | sed 's/^/agent admin: /'
"""
"""What the agent does, as `model`: edit the source, build through the agent socket, and try
what it may not (the reference fix, the admin socket)."""
_SCRATCH = re.compile(r"/tmp/ssegrade-[^\s\"']*?/(copy|stage)-\d+")
"""A scratch copy in a log: its folder and number are each grading's own (the daemon's copies
lie one level deeper, in its grading session)."""

IMAGES_LOCK = containerkit.CACHE / "ssebench-images.lock"


def _context(into: Path, bundle: Path) -> None:
    """The build context of the task image in `into`."""
    skipped = shutil.ignore_patterns("build", "__pycache__", "*.pyc")
    for part in ("task", "project", "toolchain"):
        shutil.copytree(EXAMPLES / "kvconf" / part, into / part, ignore=skipped)
    for name in ("ssebench-daemon", "main.py"):
        shutil.copy(ROOT / "docs" / "ssebench" / name, into / name)
    (into / "entrypoint.sh").write_text(ENTRYPOINT)
    (into / "sse-call").write_text(SSE_CALL)
    (into / "Containerfile").write_text(CONTAINERFILE.format(base=containerkit.PYTHON_BASE))
    shutil.copytree(bundle, into / "ssegrade", symlinks=True)


def _digest(context: Path, bundle: Path) -> str:
    digest = hashlib.sha256(bundle.name.encode())
    for path in sorted(context.rglob("*")):
        relative = path.relative_to(context).as_posix()
        if relative.split("/")[0] == "ssegrade":
            continue  # named by its version digest
        digest.update(relative.encode() + b"\0")
        if path.is_file() and not path.is_symlink():
            digest.update(oct(path.stat().st_mode).encode() + path.read_bytes())
    return digest.hexdigest()[:12]


@pytest.fixture(scope="module")
def image() -> str:
    """The task image, built once (by one worker at a time) and reused while its inputs stay."""
    containerkit.require_engine()
    bundle = containerkit.ssegrade_bundle()
    with tempfile.TemporaryDirectory(prefix="ssegrade-ssebench-image-") as scratch:
        context = Path(scratch)
        _context(context, bundle)
        name = f"localhost/ssegrade-test-ssebench-kvconf:{_digest(context, bundle)}"
        IMAGES_LOCK.parent.mkdir(parents=True, exist_ok=True)
        lock = os.open(IMAGES_LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if containerkit.podman("image", "exists", name).returncode != 0:
                built = containerkit.podman(
                    "build", "--network", "none", "--quiet", "-t", name, str(context)
                )
                assert built.returncode == 0, f"building {name}: {built.stderr}"
        finally:
            os.close(lock)
    return name


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the agent and runner accounts can enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-ssebench-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def run_folder(work: Path) -> Path:
    """The run folder as SSEBench's runner makes it before the container starts: the host
    user's, with `archive/` and an empty `result.json`."""
    run = work / "run"
    (run / "archive").mkdir(parents=True)
    (run / "result.json").touch()
    for path in (run, run / "archive", run / "result.json"):
        os.chown(path, HOST_USER, HOST_USER)
    return run


def like_ssebench(image: str, work: Path, agent_diff: bytes) -> subprocess.CompletedProcess[str]:
    """Run `image` as SSEBench's runner runs a task container, the agent applying
    `agent_diff`; the container's output."""
    (work / "in").mkdir()
    (work / "in" / "agent.diff").write_bytes(agent_diff)
    (work / "in" / "agent.sh").write_text(AGENT)
    run = work / "run"
    name = f"ssegrade-test-{uuid.uuid4().hex[:16]}"
    env = {
        "SSE_API_KEY": "unused",
        "SSE_BASE_URL": "http://unused.invalid",
        "SSE_MODEL_NAME": "none",
        "SSE_ARCHIVE": "/tmp/sse-archive",
        "SSE_DIFFICULTY": "2",
        "TIMEOUT": "600",
        "SSE_KEEP_ALIVE": "0",
    }
    options = [option for key, value in env.items() for option in ("-e", f"{key}={value}")]
    options += [
        "-v",
        f"{run}:/var/lib/ssebench/results",
        "-v",
        f"{run / 'archive'}:/tmp/sse-archive",
    ]
    options += ["-v", f"{work / 'in'}:/in:ro", "--label", containerkit.LABEL]
    argv = ["run", "--rm", "--name", name, "--network", "none", *options, image, "sh /in/agent.sh"]
    try:
        return containerkit.podman(*argv, timeout=300)
    finally:
        containerkit.podman("rm", "--force", "--ignore", name)


def on_host(work: Path, patch: Path) -> dict[str, object]:
    """`ssegrade evaluate --patch` of `patch` on the host, its paths said as the container's."""
    example = lay_out(work, "kvconf", "diffs/patch.diff", baseline=False)
    toolchain = work / "toolchain"
    shutil.copytree(EXAMPLES / "kvconf" / "toolchain", toolchain)
    results = work / "host"
    done = ssegrade(
        "evaluate", "--task", str(example.task), "--patch", str(patch),
        "--repo", str(example.source), "--results", str(results),
        env={"KVC_HOME": str(toolchain)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (results / "result.json").read_text().replace(str(example.task), "/ssebench")
    said: dict[str, object] = json.loads(text)["patch_result"]
    return said


def comparable(patch_result: dict[str, object]) -> dict[str, object]:
    """`patch_result` with each grading's own scratch copies named alike."""
    return {
        key: _SCRATCH.sub(r"<scratch>/\1", value) if isinstance(value, str) else value
        for key, value in patch_result.items()
    }


FIX = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_bytes()


@pytest.mark.parametrize(
    ("diff", "verdict"), [(FIX, "passed"), (b"", "failed")], ids=["fix", "none"]
)
def test_ssebench_runs_a_task_with_ssegrade_in_a_default_container(
    image: str, work: Path, diff: bytes, verdict: str
) -> None:
    run = run_folder(work)
    premade = (run / "result.json").stat()
    done = like_ssebench(image, work, diff)
    said = {name: (run / f"{name}.log").read_text() for name in ("agent", "daemon", "evaluator")}
    assert done.returncode == 0, f"{done.stdout}{done.stderr}{said}"
    assert "evaluator exit 0" in done.stdout, said

    # The agent: itself, its edit, a build through its socket; no reference, no admin socket.
    agent = said["agent"]
    lines = ["agent: model", 'agent build: 200 {"code":0,"stdout":"kvc: ']
    for line in [*lines, "agent: applied"] if diff else lines:
        assert f"\n{line}" in f"\n{agent}", agent
    assert "agent reference: 403 " in agent, agent
    assert "agent admin: PermissionError" in agent, agent
    assert "scripts: containment container (no CAP_SYS_ADMIN" in said["daemon"], said["daemon"]

    # The grade: in the very file the runner made, given back with the folder to its owner.
    graded = run / "result.json"
    after = graded.stat()
    assert (after.st_ino, after.st_dev, after.st_uid) == (premade.st_ino, premade.st_dev, HOST_USER)
    assert run.stat().st_uid == HOST_USER
    result = json.loads(graded.read_bytes())
    assert list(result) == ["patch_result", "runtime_result"]
    runtime = result["runtime_result"]
    assert runtime["agent_exit_code"] == 0
    assert (runtime["agent_timeout"], runtime["evaluator_timeout"]) == (False, False)
    assert isinstance(runtime["agent_duration"], int)
    inside = result["patch_result"]
    assert inside["status"] == verdict, inside
    checks = (run / "checks.jsonl").read_text().splitlines()
    assert {json.loads(check)["containment"] for check in checks} - {None} == {"container"}

    # The same patch (as the daemon captured it) graded on the host, field by field.
    host = comparable(on_host(work / "h", run / "final.patch"))
    for key, value in comparable(inside).items():
        assert host[key] == value, key
    assert list(host) == list(inside)


def _docker_unavailable() -> str | None:
    if shutil.which("docker") is None:
        return "docker is not installed"
    answered = subprocess.run(
        ["docker", "version", "--format", "{{.Server.Version}}"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    if answered.returncode != 0:
        lines = (answered.stderr.strip() or f"exit {answered.returncode}").splitlines()
        return f"no Docker engine answers: {lines[-1]}"
    return None


def test_the_documented_task_container_grades_with_docker() -> None:
    # docs/operators.md, word for word: build from the top of the repository, then run the
    # reference fix as the agent, with Docker's default capabilities.
    why = _docker_unavailable()
    if why is not None:
        pytest.skip(why)
    tag = f"kvconf-task-{uuid.uuid4().hex[:12]}"
    build = ["docker", "build", "-f", "docs/container/Dockerfile", "-t", tag, "."]
    built = subprocess.run(
        build, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False
    )
    assert built.returncode == 0, built.stderr
    try:
        ran = subprocess.run(
            ["docker", "run", "--rm", tag, "git", "apply", "/ssebench/diffs/patch.diff"],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip().splitlines()[-1] == "passed", ran.stdout + ran.stderr
    finally:
        subprocess.run(["docker", "image", "rm", "--force", tag], capture_output=True, check=False)
