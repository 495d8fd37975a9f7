"""The kvconf example graded inside a container of its task image, ssegrade brought in by its
bundle, as SSEBench runs a task: the verdicts of the host, field by field.

With the engine's default capabilities (SSEBench adds none), the default containment is
`container` (the container is the boundary) and grades as the host does; `--containment weak`
too; `--containment full` refuses, naming what the container lacks. A grading there leaves no
process of the runner and nothing in /tmp or /dev/shm, even what a hostile patch hides; two
gradings started at once take turns; the daemon starts as SSEBench's entrypoint starts it. With
SYS_ADMIN and NET_ADMIN, full containment grades the same verdicts, with no wrapper: ssegrade
makes the read-only cgroup mount writable for itself.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import containerkit
from tests.support.exampletasks import EXAMPLES, lay_out
from tests.support.realtask import ssegrade

pytestmark = [pytest.mark.container, pytest.mark.slow]

PATCHES = {"reference": "/ssebench/diffs/patch.diff", "empty": "/in/empty.diff"}
VERDICTS = {"reference": "passed", "empty": "failed"}
FULL = ("--cap-add", "SYS_ADMIN,NET_ADMIN", "--tmpfs", "/tmp:rw,exec")
HOSTILE = "\n".join(
    [
        "diff --git a/kvconf/__init__.py b/kvconf/__init__.py",
        "--- a/kvconf/__init__.py",
        "+++ b/kvconf/__init__.py",
        "@@ -1,5 +1,10 @@",
        ' """kvconf: `key = value` configuration files with `include` directives."""',
        " ",
        "+import subprocess as _sp",
        "+",
        '+_sp.Popen(["setsid", "sleep", "300"], env={"PATH": "/usr/bin:/bin"}, stdout=_sp.DEVNULL)',
        '+open("/tmp/left-by-the-runner", "w").close()',
        '+open("/dev/shm/left-by-the-runner", "w").close()',
        " from kvconf.parser import ConfigError, load",
        " ",
        ' __all__ = ["ConfigError", "load"]',
        "",
    ]
)
"""A patch whose package, imported by every PoC, leaves a sleeper in a session of its own, with
an environment that carries no marker of ssegrade's, and files in /tmp and /dev/shm."""
SLOW = "\n".join(
    [
        "diff --git a/kvconf/__init__.py b/kvconf/__init__.py",
        "--- a/kvconf/__init__.py",
        "+++ b/kvconf/__init__.py",
        "@@ -1,5 +1,8 @@",
        ' """kvconf: `key = value` configuration files with `include` directives."""',
        " ",
        "+import time",
        "+",
        "+time.sleep(1)",
        " from kvconf.parser import ConfigError, load",
        " ",
        ' __all__ = ["ConfigError", "load"]',
        "",
    ]
)
"""A patch that fixes nothing and takes a second at each import of its package."""
LEFT = (
    'for p in /proc/[0-9]*; do [ "$(stat -c %U $p 2>/dev/null)" = sse-runner ] && echo $p; done;'
    " ls /tmp/left-by-the-runner /dev/shm/left-by-the-runner 2>/dev/null; true"
)
"""What the runner left in the container: its processes and the hostile patch's files."""
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


@pytest.mark.parametrize("which", ["reference", "empty"])
def test_the_default_containment_in_a_default_container_is_container(
    image: str, work: Path, which: str
) -> None:
    # Before: root in a default container could not have full containment, and every
    # grading there (every SSEBench run) ended in error.
    line, inside = in_container(image, work / "c", PATCHES[which])
    assert inside["status"] == VERDICTS[which], inside["error_log"]
    assert line.startswith(VERDICTS[which])
    checks = (work / "c" / "out" / "run" / "checks.jsonl").read_text().splitlines()
    modes = {json.loads(check)["containment"] for check in checks} - {None}
    assert modes == {"container"}
    log = next((work / "c" / "out" / "run" / "logs").glob("*-build.log")).read_text()
    assert "containment: container (no CAP_SYS_ADMIN: no pids cgroup (" in log
    assert "inside a container (pid namespace not the host's;" in log
    assert "not prevented (container containment): " in log
    assert comparable(inside) == comparable(on_host(work / "h", which))


def test_full_containment_asked_for_in_a_default_container_is_refused(
    image: str, work: Path
) -> None:
    line, inside = in_container(image, work, PATCHES["reference"], extra=("--containment", "full"))
    assert inside["status"] == "error"
    assert "\n" not in line
    assert line.startswith("error: Exception: full containment cannot be had: "), line
    for missing in ("no pids cgroup", "no network namespace", "no private /tmp"):
        assert missing in line


def in_shell(
    image: str, work: Path, script: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """Run `script` (sh) in a fresh container of `image` under default capabilities (and
    `options`), with /in (read-only, holding the patches) and /out of `work`."""
    (work / "in").mkdir(parents=True, exist_ok=True)
    (work / "in" / "empty.diff").write_bytes(b"")
    (work / "in" / "hostile.diff").write_text(HOSTILE)
    (work / "out").mkdir(exist_ok=True)
    mounts = ("-v", f"{work / 'in'}:/in:ro", "-v", f"{work / 'out'}:/out")
    return containerkit.run(image, ["sh", "-c", script], options=(*mounts, *options))


DROP_IN = Path(__file__).resolve().parents[2] / "docs" / "ssebench" / "ssebench-daemon"
EVALUATE = f"{containerkit.BUNDLE_AT}/ssegrade evaluate --task /ssebench --repo /src/kvconf"


def test_nothing_of_the_runner_outlives_a_grading_in_a_default_container(
    image: str, work: Path
) -> None:
    # The attack: a PoC's import leaves a setsid sleeper without ssegrade's markers, and files
    # in the container's /tmp and /dev/shm, for the next grading or the agent to find.
    script = f"{EVALUATE} --patch /in/hostile.diff --results /out/run; echo LEFT; {LEFT}"
    done = in_shell(image, work, script)
    verdict, _, left = done.stdout.partition("LEFT\n")
    assert verdict.startswith("failed"), done.stdout + done.stderr
    assert left.strip() == "", f"left in the container: {left}"
    poc = next((work / "out" / "run" / "logs").glob("*-poc-1.log")).read_text()
    assert "container containment: removed what the runner left: " in poc
    assert "/dev/shm/left-by-the-runner" in poc


def test_two_gradings_at_once_in_a_container_take_turns(image: str, work: Path) -> None:
    # The second starts once the first holds the container's lock: it must wait, not kill the
    # first one's scripts nor remove its files (the first, a fix, would not pass), and both
    # verdicts are right.
    (work / "in").mkdir(parents=True, exist_ok=True)
    fix = (EXAMPLES / "kvconf" / "task" / "diffs" / "patch.diff").read_text()
    (work / "in" / "slow.diff").write_text(fix + SLOW)  # the fix, a second per import
    lock = "/run/ssegrade-grading.lock"
    script = (
        f"{EVALUATE} --patch /in/slow.diff --results /out/a > /out/a.txt 2>&1 & first=$!; "
        f"for i in $(seq 300); do [ -s {lock} ] && break; sleep 0.05; done; "
        f"{EVALUATE} --patch {PATCHES['empty']} --results /out/b > /out/b.txt 2>&1; "
        "wait $first"
    )
    done = in_shell(image, work, script)
    assert done.returncode == 0, done.stderr
    said = {name: (work / "out" / f"{name}.txt").read_text() for name in ("a", "b")}
    for name, verdict in (("a", "passed"), ("b", "failed")):
        result = json.loads((work / "out" / name / "result.json").read_text())
        assert result["patch_result"]["status"] == verdict, said[name]
    assert "one grading at a time in a container" in said["b"], said


def test_the_daemon_starts_and_grades_in_a_default_container(image: str, work: Path) -> None:
    # As SSEBench's entrypoint: the drop-in starts the daemon with no containment option, the
    # agent edits its tree once the agent-facing socket exists (the baseline is recorded then;
    # the root-only admin socket exists sooner), then the evaluator grades through the admin
    # socket.
    script = (
        f"ln -s {containerkit.BUNDLE_AT}/ssegrade /usr/local/bin/ssegrade; "
        "export SSE_RESULTS=/out/d SSE_ADMIN_SOCKET=/run/ssebench-admin/admin.sock; "
        "mkdir -p -m 700 /run/ssebench-admin; "
        "ssebench-daemon > /out/daemon.txt 2>&1 & daemon=$!; "
        "for i in $(seq 600); do [ -S /run/ssebench/daemon.sock ] && break; "
        "kill -0 $daemon || break; sleep 0.2; done; "
        "git -C /src/kvconf apply /ssebench/diffs/patch.diff; "
        'ssegrade evaluate --daemon "$SSE_ADMIN_SOCKET"; '
        f"kill $daemon; wait $daemon; echo LEFT; {LEFT}"
    )
    drop_in = f"{DROP_IN}:/usr/local/bin/ssebench-daemon:ro"
    done = in_shell(image, work, script, "-v", drop_in)
    said = (work / "out" / "daemon.txt").read_text()
    assert "scripts: containment container (no CAP_SYS_ADMIN" in said, said
    verdict, _, left = done.stdout.partition("LEFT\n")
    assert verdict.strip().splitlines()[-1] == "passed", done.stdout + done.stderr + said
    assert left.strip() == ""
    checks = (work / "out" / "d" / "checks.jsonl").read_text().splitlines()
    assert {json.loads(check)["containment"] for check in checks} - {None} == {"container"}


@pytest.mark.parametrize("which", ["reference", "empty"])
def test_full_containment_with_sys_admin_and_net_admin_grades_as_weak(
    image: str, work: Path, which: str
) -> None:
    # No wrapper: before, the pids controller had to be remounted writable first.
    verdict, full = in_container(image, work / "full", PATCHES[which], options=FULL)
    assert full["status"] == VERDICTS[which], full["error_log"]
    assert verdict.startswith(VERDICTS[which])
    log = next((work / "full" / "out" / "run" / "logs").glob("*-build.log")).read_text()
    assert "containment: full (PID, mount, IPC and network namespaces" in log
    # The repo lies on the container's overlay root: the log says which step refused a view.
    assert (
        "the grading repo lies on overlayfs, which cannot be idmapped (the grading repo's " in log
    )
    _, weak = in_container(image, work / "weak", PATCHES[which], extra=("--containment", "weak"))
    assert comparable(full) == comparable(weak)
