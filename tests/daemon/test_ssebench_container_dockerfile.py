"""`docs/container/Dockerfile`, built and run as `docs/operators.md` says, for each bundled
example: kvconf (its toolchain a folder of the example) and rle (C with AddressSanitizer, its
toolchain Debian's gcc, make and libc6-dev through `--build-arg PACKAGES`).

`python:3.11-slim`, from a registry the tests cannot reach, is the tests' one stand-in
(`containerkit.python_slim`: Debian's Python 3.11 from the tests' python3 base, pip installing
into /usr/local), built once per content with podman. With Docker (the tests' private dockerd,
`tests/support/dockerkit.py`) for kvconf: the stand-in moved there under that name. With
podman for rle: the same Dockerfile and build arguments, its first `FROM` replaced by `--from`
the stand-in (the build reaches the Debian mirror and PyPI through the host's network), built
once per content, then run with the engine's default capabilities: the reference fix passes,
no fix fails on the PoC's ASan report.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import uuid
from pathlib import Path

import pytest

from interpreters.engine.images import engine_program
from tests.support import containerkit
from tests.support.dockerkit import Daemon, docker_engine, python_slim

pytestmark = [pytest.mark.container, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = {"kvconf": "", "rle": "gcc make libc6-dev"}
"""The `PACKAGES` build argument of each example, as docs/operators.md gives it."""


def build_arguments(example: str) -> list[str]:
    """The documented build arguments of `example` (none for kvconf, the default)."""
    if example == "kvconf":
        return []
    return ["--build-arg", f"EXAMPLE={example}", "--build-arg", f"PACKAGES={PACKAGES[example]}"]


def test_the_documentation_gives_each_examples_build() -> None:
    # The builds tested here are the ones operators.md and the Dockerfile's header give.
    texts = [
        (ROOT / "docs" / name).read_text() for name in ("operators.md", "container/Dockerfile")
    ]
    joined = [re.sub(r"\\\n#?\s+", "", text) for text in texts]  # continued lines joined
    for example, packages in PACKAGES.items():
        words = " ".join(["docker build -f docs/container/Dockerfile", *build_arguments(example)])
        line = words.replace(f"PACKAGES={packages}", f'PACKAGES="{packages}"')
        for text in joined:
            assert f"{line} -t {example}-task ." in text, (example, line)


__all__ = ["docker_engine"]  # the fixture, found by pytest in this module


@pytest.mark.parametrize("example", ["kvconf"])
def test_the_documented_task_container_grades_with_docker(
    example: str, docker_engine: Daemon
) -> None:
    # docs/operators.md, word for word: build from the top of the repository, then run the
    # reference fix as the agent, with Docker's default capabilities. On the tests' private
    # dockerd: `python:3.11-slim` is a stand-in (no registry here), and the build takes the
    # host's network (the daemon makes no bridge). The C example is built with podman below.
    python_slim(docker_engine)
    tag = f"{example}-task-{uuid.uuid4().hex[:12]}"
    build = ["build", "--network", "host", "-f", "docs/container/Dockerfile"]
    built = subprocess.run(
        [engine_program("docker"), *build, *build_arguments(example), "-t", tag, "."],
        cwd=ROOT, env=docker_engine.environment(), capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    assert built.returncode == 0, built.stderr
    try:
        ran = docker_engine.docker("run", "--rm", tag, "git", "apply", "/ssebench/diffs/patch.diff")
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip().splitlines()[-1] == "passed", ran.stdout + ran.stderr
    finally:
        docker_engine.docker("image", "rm", "--force", tag)


AGENTS = [(["git", "apply", "/ssebench/diffs/patch.diff"], "passed"), ([], "failed")]
"""The reference fix as the agent, and an agent that changes nothing."""


BUILT_FROM = ("Dockerfile", "README.md", "pyproject.toml", "ssegrade", "interpreters", "examples")
"""What the documented build copies (the Dockerfile and its entry point in `docs/container`)."""


def documented_image(example: str) -> str:
    """`example`'s image of the documented Dockerfile, built unless one of the same inputs is
    there (named by their digest)."""
    base = containerkit.python_slim()
    arguments = build_arguments(example)
    digest = hashlib.sha256("\0".join([base, *arguments]).encode())
    for top in BUILT_FROM:
        folder = ROOT / "docs" / "container" if top == "Dockerfile" else ROOT / top
        for path in sorted(folder.rglob("*")) if folder.is_dir() else [folder]:
            skipped = {"__pycache__", "build"} & set(path.relative_to(ROOT).parts)
            if path.is_file() and not skipped and path.suffix != ".pyc":
                digest.update(f"{path.relative_to(ROOT)}\0".encode() + path.read_bytes())
    image = f"localhost/ssegrade-test-documented-{example}:{digest.hexdigest()[:12]}"
    options = ["--from", base, "-f", str(ROOT / "docs" / "container" / "Dockerfile"), *arguments]
    containerkit.build_once(image, ROOT, network="host", options=options)
    return image


@pytest.mark.parametrize("example", ["rle"])
def test_the_documented_task_container_grades_with_podman(example: str, tmp_path: Path) -> None:
    # The documented build (once per content), then each agent, with the engine's default
    # capabilities.
    image = documented_image(example)
    for n, (agent, verdict) in enumerate(AGENTS):
        results = tmp_path / str(n)
        results.mkdir()
        options = ["-v", f"{results}:/var/lib/ssebench/results", "--network", "none"]
        ran = _run(image, options, agent)
        assert ran.returncode == 0, ran.stdout + ran.stderr
        said = ran.stdout.strip().splitlines()[-1]  # "passed", "failed: why"
        assert said.split(":")[0] == verdict, ran.stdout + ran.stderr
        graded = json.loads((results / "result.json").read_bytes())["patch_result"]
        assert graded["status"] == verdict, graded
    # The unfixed tree failed on the PoC's AddressSanitizer report, raised in the container.
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in graded["error_log"], graded


def _run(image: str, options: list[str], command: list[str]) -> subprocess.CompletedProcess[str]:
    name = f"ssegrade-test-{uuid.uuid4().hex[:16]}"
    argv = ["run", "--rm", "--name", name, "--label", containerkit.LABEL, *options, image]
    try:
        return containerkit.podman(*argv, *command, timeout=600)
    finally:
        containerkit.podman("rm", "--force", "--ignore", name)
