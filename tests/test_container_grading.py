"""The kvconf example graded inside a container of its task image, ssegrade brought in by its
bundle, as SSEBench runs a task: the verdicts of the host, field by field.

With the engine's default capabilities (SSEBench adds none), `--containment weak` grades; the
default containment refuses, naming what the container lacks. With SYS_ADMIN and NET_ADMIN and
the pids controller remounted writable, full containment grades the same verdicts.
"""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests import containerkit
from tests.exampletasks import EXAMPLES, lay_out
from tests.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow]

PATCHES = {"reference": "/ssebench/diffs/patch.diff", "empty": "/in/empty.diff"}
VERDICTS = {"reference": "passed", "empty": "failed"}
FULL = ("--cap-add", "SYS_ADMIN,NET_ADMIN", "--tmpfs", "/tmp:rw,exec")
REMOUNT = "mount -o remount,bind,rw /sys/fs/cgroup/pids"
"""What lets ssegrade make its pids cgroups below the container's: podman mounts the
controller read-only, and only SYS_ADMIN can remount it."""
_SCRATCH = re.compile(r"/tmp/ssegrade-[^/\s\"']+")


@pytest.fixture(scope="module")
def image() -> str:
    """The kvconf task image (built once), the engine checked first."""
    containerkit.require_engine()
    return containerkit.task_image("kvconf")


def in_container(
    image: str,
    work: Path,
    patch: str,
    *,
    options: tuple[str, ...] = (),
    first: str = "",
    extra: tuple[str, ...] = (),
) -> tuple[str, dict[str, object]]:
    """Grade `patch` (a path in the container) in a fresh container of `image`: the verdict
    line and `patch_result`."""
    (work / "in").mkdir(parents=True, exist_ok=True)
    (work / "in" / "empty.diff").write_bytes(b"")
    (work / "out").mkdir(exist_ok=True)
    evaluate = [containerkit.BUNDLE_AT + "/ssegrade", "evaluate", "--task", "/ssebench"]
    evaluate += ["--patch", patch, "--repo", "/src/kvconf", "--results", "/out/run", *extra]
    command = ["sh", "-c", f'{first}exec "$@"', "grade", *evaluate]
    mounts = ("-v", f"{work / 'in'}:/in:ro", "-v", f"{work / 'out'}:/out")
    done = containerkit.run(image, command, options=(*mounts, *options))
    assert done.returncode == 0, done.stderr
    result = json.loads((work / "out" / "run" / "result.json").read_bytes())
    return done.stdout.strip(), result["patch_result"]


def on_host(work: Path, which: str) -> dict[str, object]:
    """The same grading on the host, its paths said as the container's."""
    example = lay_out(work, "kvconf", "diffs/patch.diff", baseline=False)
    toolchain = work / "toolchain"
    shutil.copytree(EXAMPLES / "kvconf" / "toolchain", toolchain)
    patch = example.fix if which == "reference" else work / "empty.diff"
    patch.touch()
    results = work / "host"
    done = ssegrade(
        "evaluate", "--task", str(example.task), "--patch", str(patch),
        "--repo", str(example.source), "--results", str(results), "--containment", "weak",
        env={"KVC_HOME": str(toolchain)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = (results / "result.json").read_text().replace(str(example.task), "/ssebench")
    said: dict[str, object] = json.loads(text)["patch_result"]
    return said


def comparable(patch_result: dict[str, object]) -> dict[str, object]:
    """`patch_result` with each grading's own scratch folder named alike."""
    return {
        key: _SCRATCH.sub("<scratch>", value) if isinstance(value, str) else value
        for key, value in patch_result.items()
    }


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner account can enter (pytest's own are root's alone)."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-container-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("which", ["reference", "empty"])
def test_weak_containment_in_a_default_container_grades_as_the_host(
    image: str, work: Path, which: str
) -> None:
    line, inside = in_container(image, work / "c", PATCHES[which], extra=("--containment", "weak"))
    assert inside["status"] == VERDICTS[which], inside["error_log"]
    assert line.startswith(VERDICTS[which])
    host = on_host(work / "h", which)
    assert comparable(inside) == comparable(host)


def test_the_default_containment_refuses_in_a_default_container(image: str, work: Path) -> None:
    # Today: root in a container with default capabilities cannot have full containment, and
    # the grading says what is missing in one line. (A `container` mode will grade here.)
    line, inside = in_container(image, work, PATCHES["reference"])
    assert inside["status"] == "error"
    assert "\n" not in line
    assert line.startswith("error: Exception: full containment cannot be had: "), line
    for missing in ("no pids cgroup", "no network namespace", "no private /tmp"):
        assert missing in line
    assert line.endswith("--containment weak runs scripts without it")


@pytest.mark.parametrize("which", ["reference", "empty"])
def test_full_containment_with_sys_admin_and_net_admin_grades_as_weak(
    image: str, work: Path, which: str
) -> None:
    verdict, full = in_container(
        image, work / "full", PATCHES[which], options=FULL, first=f"{REMOUNT} && ",
        extra=("--containment", "full"),
    )  # fmt: skip
    assert full["status"] == VERDICTS[which], full["error_log"]
    assert verdict.startswith(VERDICTS[which])
    log = next((work / "full" / "out" / "run" / "logs").glob("*-build.log")).read_text()
    assert "containment: full (PID, mount and network namespaces" in log
    _, weak = in_container(image, work / "weak", PATCHES[which], extra=("--containment", "weak"))
    assert comparable(full) == comparable(weak)
