"""SSEBench's own flow in a real container with the engine's default capabilities.

For each bundled example (kvconf, whose toolchain is Python; rle, C built with AddressSanitizer
whose PoC triggers an ASan report), a task image laid out as SSEBench lays one out (the task at
`/ssebench`, root's alone; the project at `/src/<project>`, the agent's, as one commit; the
toolchain in the image, set in `ENV` where it needs a setting; the accounts
`model` and `sse-runner`; the results folder's parent root-only), with ssegrade installed in it
and the drop-ins in the places of SSEBench's daemon (`/ssebench/ssebench-daemon`) and evaluator
(`/evaluator/main.py`). It runs as SSEBench's runner runs it (the `docker run` of its Docker
backend), on podman and on Docker (the tests' private dockerd, `tests/support/dockerkit.py`,
the image moved from podman with its ID): no capability added, the run folder (made on the
host with an empty `result.json` and `archive/`, the host user's) mounted at
`/var/lib/ssebench/results`, its archive at `SSE_ARCHIVE`, the agent's input read-only as the
runner's artifacts. Its entry point takes the steps of SSEBench's entrypoint: results and log
files, the daemon, the agent as `model` (it edits the source and builds through the agent
socket), `/admin/agent_exited`, then the evaluator. The grade lands in the very `result.json`
the host made, and matches the same patch graded on the host, field by field, and so does the
guard's `guard.json`: on either engine (Docker's wider default capabilities, its seccomp
profile and its `/.dockerenv` change nothing of the grade).

`docs/container/Dockerfile` has its tests in `test_ssebench_container_dockerfile.py`.
"""

from __future__ import annotations

import functools
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
from typing import Any

import pytest

from tests.support import containerkit
from tests.support.dockerkit import Daemon, docker_engine
from tests.support.enginekit import PODMAN, Engine
from tests.support.exampletasks import EXAMPLES, lay_out
from tests.support.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
HOST_USER = 1000
"""Who ran SSEBench's runner on the host: the run folder and its empty `result.json` are his."""

CONTAINERFILE = """FROM {base}
COPY ssegrade /opt/ssegrade
COPY task /ssebench
COPY project /src/{project}
{toolchain}COPY ssebench-daemon /ssebench/ssebench-daemon
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
 && chown -R model:model /src/{project} \\
 && su model -c "cd /src/{project} && git init -q -b main && git add -A \\
        && git -c user.name=task -c user.email=task@example.invalid commit -q -m 'buggy commit'"
ENTRYPOINT ["/usr/local/bin/entrypoint.sh"]
"""
"""The task image: SSEBench's case image layout, ssegrade and the drop-ins installed."""
TOOLCHAIN = {"kvconf": "COPY toolchain /opt/kvc\nENV KVC_HOME=/opt/kvc\n", "rle": ""}
"""Each example's toolchain in its image: kvconf's `kvc` in a folder its setting names; rle's
gcc, make and libasan in the base image (containerkit.C_BASE)."""
BUILT = {"kvconf": "kvc: ", "rle": "mkdir -p build"}
"""How the output of each example's build script begins."""

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
git -C "$1" apply /in/agent.diff && echo "agent: applied"
echo "agent build: $(sse-call "$SSE_DAEMON_SOCKET" POST '/tool/bencher?action=build' '{}')"
echo "agent reference: $(sse-call "$SSE_DAEMON_SOCKET" GET /reference/patch)"
sse-call /run/ssebench/admin.sock GET /version 2>&1 | tail -n 1 | sed 's/^/agent admin: /'
"""
"""What the agent does, as `model` (`sh /in/agent.sh SOURCE`): edit the source, build through
the agent socket, and try what it may not (the reference fix, the admin socket)."""
_SCRATCH = re.compile(r"/tmp/ssegrade-[^\s\"']*?/(copy|stage)-\d+")
"""A scratch copy in a log: its folder and number are each grading's own (the daemon's copies
lie one level deeper, in its grading session)."""
_LIBC_FRAME = re.compile(r"(#\d+) 0x[0-9a-f]+ [^\n]*(?:libc\.so|__libc_)[^\n]*")
"""A frame of an ASan report in libc: symbolized where the debug symbols are installed (the
host), by its module and offset where not (the image)."""
_RUN_OWN = re.compile(r"==\d+==|0x[0-9a-f]+")
"""What an ASan report says of its run alone: the process id, addresses (ASLR)."""


def _context(into: Path, bundle: Path, example: str) -> None:
    """The build context of `example`'s task image in `into`."""
    skipped = shutil.ignore_patterns("build", "__pycache__", "*.pyc")
    for part in ("task", "project", "toolchain"):
        if (EXAMPLES / example / part).is_dir():
            shutil.copytree(EXAMPLES / example / part, into / part, ignore=skipped)
    for name in ("ssebench-daemon", "main.py"):
        shutil.copy(ROOT / "docs" / "ssebench" / name, into / name)
    (into / "entrypoint.sh").write_text(ENTRYPOINT)
    (into / "sse-call").write_text(SSE_CALL)
    base, toolchain = containerkit.BASE_OF[example], TOOLCHAIN[example]
    text = CONTAINERFILE.format(base=base, project=example, toolchain=toolchain)
    (into / "Containerfile").write_text(text)
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


@functools.cache
def image(example: str) -> str:
    """`example`'s task image, built once (by one worker at a time) and reused while its inputs
    stay; the test skips (fails on CI) without the engine or the example's base image."""
    containerkit.require_image(containerkit.BASE_OF[example])
    bundle = containerkit.ssegrade_bundle()
    with tempfile.TemporaryDirectory(prefix="ssegrade-ssebench-image-") as scratch:
        context = Path(scratch)
        _context(context, bundle, example)
        name = f"localhost/ssegrade-test-ssebench-{example}:{_digest(context, bundle)}"
        containerkit.build_once(name, context)
    return name


__all__ = ["docker_engine"]  # the fixture, found by pytest in this module


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> Engine:
    """The engine the test names: podman, or the tests' private dockerd
    (`tests/support/dockerkit.py`)."""
    if request.param == "podman":
        return PODMAN
    daemon: Daemon = request.getfixturevalue("docker_engine")
    return daemon.engine


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the agent and runner accounts can enter (pytest's own are root's alone)."""
    with containerkit.shared_folder("ssegrade-ssebench-") as folder:
        yield folder


def run_folder(work: Path) -> Path:
    """The run folder as SSEBench's runner makes it before the container starts: the host
    user's, with `archive/` and an empty `result.json`."""
    run = work / "run"
    (run / "archive").mkdir(parents=True)
    (run / "result.json").touch()
    for path in (run, run / "archive", run / "result.json"):
        os.chown(path, HOST_USER, HOST_USER)
    return run


def like_ssebench(
    engine: Engine, image: str, work: Path, agent_diff: bytes, source: str
) -> subprocess.CompletedProcess[str]:
    """Run `image` on `engine` as SSEBench's runner runs a task container, the agent applying
    `agent_diff` to `source`; the container's output. The options are those of its Docker
    backend's `docker run`: `--rm`, the run's network (here none), its environment, the run
    folder and its `archive/` bound with `-v`, its artifacts read-only with `--mount`, labels,
    no capability added; a `--name` stands in for its `--cidfile`, to remove the container
    whatever happens."""
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
    given = f"type=bind,source={work / 'in'},target=/in,readonly"  # as its read-only artifacts
    options += ["--mount", given, "--label", containerkit.LABEL]
    argv = [
        "run",
        "--rm",
        "--name",
        name,
        "--network",
        "none",
        *options,
        image,
        f"sh /in/agent.sh {source}",
    ]
    try:
        return engine.run(*argv, timeout=300)
    finally:
        engine.run("rm", "--force", name)


def on_host(work: Path, patch: Path, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """`ssegrade evaluate --patch` of `patch` to example `name` on the host: `patch_result`
    and `guard.json`, their paths said as the container's."""
    example = lay_out(work, name, "diffs/patch.diff", baseline=False)
    env = {}
    if "KVC_HOME" in TOOLCHAIN[name]:
        shutil.copytree(EXAMPLES / name / "toolchain", work / "toolchain")
        env["KVC_HOME"] = str(work / "toolchain")
    results = work / "host"
    done = ssegrade(
        "evaluate", "--task", str(example.task), "--patch", str(patch),
        "--repo", str(example.source), "--results", str(results), env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = [
        json.loads((results / name).read_text().replace(str(example.task), "/ssebench"))
        for name in ("result.json", "guard.json")
    ]
    return said[0]["patch_result"], said[1]


def _same_run(text: str) -> str:
    text = _SCRATCH.sub(r"<scratch>/\1", text)
    return _RUN_OWN.sub("<n>", _LIBC_FRAME.sub(r"\1 <libc>", text))


def comparable(patch_result: dict[str, object]) -> dict[str, object]:
    """`patch_result` with what is each grading's own named alike: its scratch copies, and in
    a sanitizer's report the process id, the addresses and how libc's frames are named."""
    return {
        key: _same_run(value) if isinstance(value, str) else value
        for key, value in patch_result.items()
    }


def _diff(example: str, path: str) -> bytes:
    return (EXAMPLES / example / path).read_bytes()


CASES = {
    "kvconf-fix": ("kvconf", _diff("kvconf", "task/diffs/patch.diff"), "passed", set()),
    "kvconf-none": ("kvconf", b"", "failed", set()),
    "rle-fix": ("rle", _diff("rle", "task/diffs/patch.diff"), "passed", set()),
    "rle-none": ("rle", b"", "failed", set()),
    "rle-cheat": ("rle", _diff("rle", "cheat.diff"), "passed", {"build-config", "sanitizer"}),
}
"""Example, the agent's edit, the verdict, the kinds of the guard's flags: the reference fix,
no fix, and rle's cheat (it builds without the sanitizer: passed, and flagged)."""
ON_DOCKER = ("kvconf-fix", "rle-none")
"""The cases run on Docker too, a pass and an ASan report (under Docker's seccomp profile): the
other cases add nothing there that podman's runs of them do not show, and each costs CI 20 s."""
RUNS = [
    pytest.param(engine, *case, id=f"{engine}-{name}")
    for engine in ("podman", "docker")
    for name, case in CASES.items()
    if engine == "podman" or name in ON_DOCKER
]


@pytest.mark.parametrize(
    ("engine", "example", "diff", "verdict", "flagged"), RUNS, indirect=["engine"]
)
def test_ssebench_runs_a_task_with_ssegrade_in_a_default_container(
    engine: Engine, work: Path, example: str, diff: bytes, verdict: str, flagged: set[str]
) -> None:
    run = run_folder(work)
    premade = (run / "result.json").stat()
    done = like_ssebench(engine, engine.image(image(example)), work, diff, f"/src/{example}")
    said = {name: (run / f"{name}.log").read_text() for name in ("agent", "daemon", "evaluator")}
    assert done.returncode == 0, f"{done.stdout}{done.stderr}{said}"
    assert "evaluator exit 0" in done.stdout, said

    # The agent: itself, its edit, a build through its socket; no reference, no admin socket.
    agent = said["agent"]
    lines = ["agent: model", f'agent build: 200 {{"code":0,"stdout":"{BUILT[example]}']
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
    if example == "rle" and not diff:  # ASan works here: the PoC's report fails the grade
        assert "ERROR: AddressSanitizer: heap-buffer-overflow" in str(inside["error_log"])
    checks = (run / "checks.jsonl").read_text().splitlines()
    assert {json.loads(check)["containment"] for check in checks} - {None} == {"container"}

    # The same patch (as the daemon captured it) graded on the host, field by field.
    graded_on_host, host_guard = on_host(work / "h", run / "final.patch", example)
    host = comparable(graded_on_host)
    for key, value in comparable(inside).items():
        assert host[key] == value, key
    assert list(host) == list(inside)

    # The guard: the host's flags; the pinned re-runs of the PoCs that passed, which the
    # daemon's evaluator refuses (docs/guard.md), are a note instead of runs.
    guard = json.loads((run / "guard.json").read_bytes())
    assert guard["observed"].pop("reruns") == 0
    reruns = host_guard["observed"].pop("reruns")
    refused = [note for note in guard["notes"] if ": refused: " in note]
    assert reruns == inside["pov_passed"], host_guard
    assert len(refused) == min(reruns, 1), guard  # a refusal stops the others
    assert all(note.startswith("the pinned re-run of pocs/") for note in refused), refused
    guard["notes"] = [note for note in guard["notes"] if note not in refused]
    assert guard == host_guard
    assert {flag["kind"] for flag in guard["flags"]} == flagged, guard
