"""Real containers for the tests marked `container`: podman, the repository's engine settings,
a task image of a bundled example laid out as SSEBench lays a task out, and the ssegrade
bundle mounted into it.

The engine and its base images come from `tests/containers/setup.sh` (CI runs it). Where no
engine can run a container, a test skips with one line saying why; with `CI` set it fails
instead, so that a broken setup cannot pass unnoticed. Images and the bundle are built once
(cached by a digest of what goes in, under a lock, so parallel workers build once); every
container runs with `--rm`, a unique name and the `ssegrade.test` label, and is removed
after its run whatever happens.
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
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

from interpreters.engine import bundle
from interpreters.real.files import remove_tree
from tests.support.machinesetup import wait_for_machine_setup

TESTS = Path(__file__).resolve().parents[1]
EXAMPLES = TESTS.parent / "examples"
CONTAINERS_CONF = TESTS / "containers" / "containers.conf"
BASE = "localhost/ssegrade-base:bookworm-minbase"
"""Debian minbase with git and the system tools ssegrade runs, no Python (setup.sh)."""
PYTHON_BASE = "localhost/ssegrade-base:bookworm-minbase-python3"
"""The same with python3: the toolchain of the kvconf example is Python (setup.sh)."""
C_BASE = "localhost/ssegrade-base:bookworm-minbase-python3-gcc"
"""The python3 base with gcc, make, libc6-dev and gcc's AddressSanitizer runtime: the C
toolchain of the rle example (setup.sh)."""
BASE_OF = {"kvconf": PYTHON_BASE, "rle": C_BASE}
"""The base image of each bundled example's task image."""
CACHE = Path("/var/tmp/ssegrade-containerkit")
"""Where the bundles and the build lock live: shared by every worker and every run."""
BUNDLE_AT = "/opt/ssegrade"
"""Where a container sees the bundle."""
LABEL = "ssegrade.test"

TASK_IMAGE = """FROM {base}
COPY task /ssebench
COPY project /src/{project}
COPY toolchain /opt/kvc
RUN git -C /src/{project} init -q -b main \\
 && git -C /src/{project} add -A \\
 && git -C /src/{project} -c user.name=task -c user.email=task@example.invalid \\
        commit -q -m "buggy commit" \\
 && useradd --create-home --shell /bin/bash model \\
 && useradd --system --no-create-home --shell /usr/sbin/nologin sse-runner
ENV KVC_HOME=/opt/kvc
WORKDIR /src/{project}
"""
"""A task image as SSEBench's case images are: the task at /ssebench, the project at
/src/<project> as one commit, the toolchain set in the environment, the agent's account."""


def _environment() -> dict[str, str]:
    return {**os.environ, "CONTAINERS_CONF": str(CONTAINERS_CONF)}


def podman(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """Run podman with the repository's settings; its output, whatever its status."""
    return subprocess.run(
        ["podman", *args],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()
    return lines[-1]


def unavailable() -> str | None:
    """Why no container can run here (one line), or None when one can (once the machine's
    preparation, if one runs beside the tests, has ended)."""
    wait_for_machine_setup()
    if shutil.which("podman") is None:
        return "podman is not installed (bash tests/containers/setup.sh)"
    for image in (BASE, PYTHON_BASE):
        if podman("image", "exists", image).returncode != 0:
            return f"no image {image} (bash tests/containers/setup.sh)"
    started = podman("run", "--rm", "--network", "none", "--label", LABEL, BASE, "true")
    if started.returncode != 0:
        return f"podman cannot run a container: {_last_line(started)}"
    return None


_checked: list[str | None] = []


def require_engine() -> None:
    """Skip the test (fail it when `CI` is set) unless a container can run here."""
    if not _checked:
        _checked.append(unavailable())
    if _checked[0] is not None:
        _cannot(f"no container engine: {_checked[0]}")


def require_image(image: str) -> None:
    """Skip the test (fail it when `CI` is set) unless a container can run here and `image`,
    a base image setup.sh builds, is there."""
    require_engine()
    if podman("image", "exists", image).returncode != 0:
        _cannot(f"no image {image} (bash tests/containers/setup.sh)")


def _cannot(reason: str) -> None:
    """Skip the test for `reason`, or fail it on CI, where everything must be there."""
    if os.environ.get("CI"):
        pytest.fail(f"on CI, {reason}", pytrace=False)
    pytest.skip(reason)


@contextmanager
def _lock(name: str) -> Iterator[None]:
    CACHE.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(CACHE / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(path.relative_to(folder).as_posix().encode() + b"\0")
        if path.is_file():
            digest.update(oct(path.stat().st_mode).encode() + path.read_bytes())
    return digest.hexdigest()[:12]


def task_image(example: str = "kvconf") -> str:
    """The task image of a bundled example (`kvconf`: its toolchain is Python, so it stands on
    PYTHON_BASE), built unless there already; its name."""
    with tempfile.TemporaryDirectory(prefix="ssegrade-image-") as scratch:
        context = Path(scratch)
        skipped = shutil.ignore_patterns("build", "__pycache__", "*.pyc")
        for part in ("task", "project", "toolchain"):
            shutil.copytree(EXAMPLES / example / part, context / part, ignore=skipped)
        text = TASK_IMAGE.format(base=PYTHON_BASE, project=example)
        (context / "Containerfile").write_text(text)
        image = f"localhost/ssegrade-test-{example}:{_digest(context)}"
        with _lock("images.lock"):
            if podman("image", "exists", image).returncode != 0:
                built = podman("build", "--network", "none", "--quiet", "-t", image, str(context))
                assert built.returncode == 0, f"building {image}: {built.stderr}"
    return image


def build_once(
    image: str, context: Path, *, network: str = "none", options: Sequence[str] = ()
) -> None:
    """Build `image` from `context` (its Containerfile unless `options` name another) on
    `network` unless it is there, one builder at a time across the workers."""
    with _lock("images.lock"):
        if podman("image", "exists", image).returncode != 0:
            argv = ["build", "--network", network, "--quiet", *options, "-t", image, str(context)]
            built = podman(*argv, timeout=900)
            assert built.returncode == 0, f"building {image}: {built.stderr}"


PYTHON_SLIM = """FROM {base}
RUN apt-get update -qq \\
 && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv \\
 && rm -rf /var/lib/apt/lists/* \\
 && python3 -m venv /usr/local \\
 && echo '[global]' > /etc/pip.conf \\
 && echo 'cert = /etc/ssl/certs/ca-certificates.crt' >> /etc/pip.conf
ENV LANG=C.UTF-8
COPY ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
CMD ["python3"]
"""
"""A stand-in for `python:3.11-slim`, the base of `docs/container/Dockerfile`, which no
registry serves here: Debian bookworm's Python 3.11 (the official image's base too) as a
virtual environment at /usr/local, whose `pip` installs there; the machine's CA bundle, so that
pip reaches PyPI through the machine's proxy as the host's does."""
HOST_TRUST = Path("/etc/ssl/certs/ca-certificates.crt")


def python_slim() -> str:
    """The stand-in for `python:3.11-slim` (`PYTHON_SLIM`), built unless one of the same inputs
    is there (its only network: the Debian mirror, as setup.sh's builds); its name."""
    require_image(PYTHON_BASE)
    text, trust = PYTHON_SLIM.format(base=PYTHON_BASE), HOST_TRUST.read_bytes()
    digest = hashlib.sha256(text.encode() + b"\0" + trust).hexdigest()[:12]
    name = f"localhost/ssegrade-test-python-slim:{digest}"
    with tempfile.TemporaryDirectory(prefix="ssegrade-python-slim-") as scratch:
        context = Path(scratch)
        (context / "Containerfile").write_text(text)
        (context / HOST_TRUST.name).write_bytes(trust)
        build_once(name, context, network="host")
    return name


def save_into(image: str, load: Sequence[str], env: dict[str, str]) -> None:
    """Move the podman image `image` into another engine or store: `podman save` piped into
    the command `load` run with the environment `env`."""
    saving = subprocess.Popen(["podman", "save", image], env=_environment(),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    assert saving.stdout is not None
    try:
        loaded = subprocess.run(list(load), env=env, stdin=saving.stdout, capture_output=True,
                                text=True, timeout=600, check=False)  # fmt: skip
    finally:
        saving.stdout.close()
    _, errors = saving.communicate(timeout=60)
    assert saving.returncode == 0, errors.decode(errors="replace")
    assert loaded.returncode == 0, loaded.stderr


def ssegrade_bundle() -> Path:
    """This tree's ssegrade bundle, built once per version under CACHE (the test skips, or
    fails on CI, where patchelf is missing)."""
    if shutil.which("patchelf") is None:
        _cannot("no patchelf to build the ssegrade bundle (bash tests/containers/setup.sh)")
    return bundle.build(CACHE / "bundles")


def run(
    image: str,
    command: Sequence[str],
    *,
    options: Sequence[str] = (),
    network: str = "none",
    timeout: float = 300,
) -> subprocess.CompletedProcess[str]:
    """Run `command` in a fresh container of `image` with the bundle at BUNDLE_AT (read-only),
    on `network` (none: a grading needs none) and with `options`, and remove the container
    whatever happens."""
    name = f"ssegrade-test-{uuid.uuid4().hex[:16]}"
    mounted = ["-v", f"{ssegrade_bundle()}:{BUNDLE_AT}:ro", "--network", network]
    argv = ["run", "--rm", "--name", name, "--label", LABEL, *mounted, *options, image, *command]
    try:
        return podman(*argv, timeout=timeout)
    finally:
        podman("rm", "--force", "--ignore", name)


SCRATCH = re.compile(r"/tmp/ssegrade-[^/\s\"']+")
"""A scratch path in a grade's text, which differs between gradings."""


def check_rows(run: Path, task: str | None = None) -> list[tuple[object, ...]]:
    text = (run / "checks.jsonl").read_text()
    if task is not None:
        text = text.replace(task, "/ssebench")
    records = [json.loads(line) for line in text.splitlines()]
    keys = ("name", "poc", "exit_code", "killed", "passed")
    return [tuple(record[key] for key in keys) for record in records]


def one_line_diff(word: str) -> str:
    return f"diff --git a/{word} b/{word}\n--- a/{word}\n+++ b/{word}\n@@ -1 +1 @@\n-a\n+b\n"


def left_with(label: str) -> list[str]:
    """The containers still there that carry `label` (`NAME=VALUE`), running or not."""
    done = podman("ps", "--all", "--quiet", "--filter", f"label={label}")
    return done.stdout.split()


def patch_result_of(run: Path, task: str | None = None) -> dict[str, object]:
    text = (run / "summary.json").read_text()
    if task is not None:
        text = text.replace(task, "/ssebench")
    found: dict[str, object] = json.loads(text)["patch_result"]
    return {k: SCRATCH.sub("<s>", v) if isinstance(v, str) else v for k, v in found.items()}


def mounts_under(folder: Path) -> list[str]:
    """The mount points at or below `folder`, outermost first."""
    prefix = str(folder)
    found = []
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = line.split()[4].encode().decode("unicode_escape")
            if point == prefix or point.startswith(prefix + "/"):
                found.append(point)
    return sorted(found, key=len)


def unmount_under(folder: Path) -> None:
    """Unmount (lazily) what an engine left mounted at or below `folder`, innermost first."""
    for mount in reversed(mounts_under(folder)):
        subprocess.run(["umount", "-l", mount], capture_output=True, check=False)


def unique_id(word: str) -> str:
    """A run id no other test's job has: its containers are found by it."""
    return f"{word}-{uuid.uuid4().hex[:10]}"


@contextmanager
def shared_folder(prefix: str) -> Iterator[Path]:
    """A new folder of the temporary folder that every account may enter (the runner's, the
    agent's, a node's; pytest's own are root's alone), removed after the block."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        remove_tree(folder)
