"""The `test-hook` cheat of `verify --adversarial` for C and Rust: a test runner that exits 0
before any test runs, written in the form the project's build makes possible, graded whole on
real tasks, and flagged by the guard with a flag that counts against the run.

- C: a Makefile's `check`/`test` rule replaced by one whose recipe is `@exit 0` (the rle
  example's `test.sh` runs `make check`: its own tests and the hidden one never build);
  without such a rule, each C test's `main` returns 0 first.
- Rust: a `.cargo/config.toml` whose target runner is `true`: `cargo test` builds every test
  binary, the hidden test's too, and runs each through `true`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssegrade.batch import Cheat, write_cheats
from ssegrade.guard import guard
from ssegrade.internal.task import Scripts, Task
from tests.realtasks.lay import Laid, apply, grade, lay_out_rust, toolchain_path
from tests.support.cheatkit import applies, cheats_of
from tests.support.exampletasks import lay_out
from tests.support.realtask import ssegrade

RUST = toolchain_path("cargo", "rustc")
TESTED = Task(id="t", scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"))


def _hook(task: Task, files: dict[str, bytes]) -> Cheat:
    (hook,) = [c for c in write_cheats(task, sorted(files), files) if c.name == "test-hook"]
    return hook


@pytest.fixture
def work() -> Iterator[Path]:
    """A folder the runner can enter."""
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-cheat-hook-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_rle_gets_its_make_check_rule_replaced_and_the_guard_counts_it(tmp_path: Path) -> None:
    hook = cheats_of("rle")["test-hook"].patch
    assert hook is not None
    assert b"+++ b/Makefile" in hook
    assert b"-check: $(TESTS)\n" in hook
    assert b"+check:\n+\t@exit 0\n" in hook
    done = applies("rle", hook, tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    task = Task(id="rle", scripts=Scripts(build="b.sh", run="r.sh", test="t.sh"))
    counted = {f.kind for f in guard(hook, task) if f.counts}
    assert "build-config" in counted


def test_a_c_project_without_a_test_rule_gets_each_test_main_returning_0() -> None:
    test = b'#include "x.h"\n\nint main(void)\n{\n    return check_all();\n}\n'
    files = {"src/x.c": b"int x(void) { return 1; }\n", "tests/test_x.c": test}
    hook = _hook(Task(id="c", language="c"), files).patch or b""
    assert b"+++ b/tests/test_x.c" in hook
    assert b" {\n+    return 0;\n     return check_all();" in hook
    assert {f.kind for f in guard(hook, TESTED) if f.counts} == {"tests"}


def test_a_cargo_project_gets_a_runner_that_exits_0_and_the_guard_counts_it() -> None:
    files = {
        "Cargo.toml": b'[package]\nname = "x"\nversion = "0.1.0"\n',
        "src/lib.rs": b"pub fn x() -> u8 { 1 }\n",
        "tests/x.rs": b"#[test]\nfn t() { assert_eq!(x::x(), 1); }\n",
        "vendor/dep/Cargo.toml": b'[package]\nname = "dep"\n',
    }
    hook = _hook(Task(id="r", language="rust"), files).patch or b""
    assert b"new file mode 100644\n--- /dev/null\n+++ b/.cargo/config.toml\n" in hook
    assert b"+[target.'cfg(all())']\n+runner = \"true\"\n" in hook
    assert "build-config" in {f.kind for f in guard(hook, TESTED) if f.counts}
    own = b'[source.crates-io]\nreplace-with = "vendored"\n'
    hook = _hook(Task(id="r"), {**files, ".cargo/config.toml": own}).patch or b""
    assert b"--- a/.cargo/config.toml\n+++ b/.cargo/config.toml\n" in hook
    assert b' replace-with = "vendored"\n+\n' in hook
    runner = b'[target.x86_64-unknown-linux-gnu]\nrunner = "qemu"\n'
    cheat = _hook(Task(id="r"), {**files, ".cargo/config": runner})
    assert cheat.patch is None, cheat  # two runners would clash
    assert cheat.why_not, cheat


def test_the_hook_is_written_for_the_task_s_language_first() -> None:
    """A C project with Python test scripts, or a Python project whose Makefile has a test
    rule: the hook is the one of the task's language (a Makefile touch added to a Python
    hook would raise a build-config flag the Python hook alone does not earn)."""
    files = {
        "Makefile": b"check:\n\tpython3 -m pytest tests\n",
        "src/x.c": b"int x(void) { return 1; }\n",
        "tests/test_x.py": b"def test_x():\n    pass\n",
    }
    c_hook = _hook(Task(id="c", language="c"), files).patch or b""
    assert b"+++ b/Makefile" in c_hook
    assert b"conftest.py" not in c_hook
    python_hook = _hook(Task(id="p", language="python"), files).patch or b""
    assert b"+++ b/conftest.py" in python_hook
    assert b"Makefile" not in python_hook


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc")
def test_the_make_check_hook_passes_rle_s_tests_and_the_graded_guard_counts_it(
    work: Path,
) -> None:
    example = lay_out(work, "rle", "diffs/patch.diff")
    hook = cheats_of("rle")["test-hook"].patch
    assert hook is not None
    subprocess.run(["git", "-C", str(example.source), "apply", "-"], input=hook, check=True)
    results = work / "hook"
    done = ssegrade(
        "evaluate",
        *("--task", str(example.task), "--source", str(example.source)),
        *("--baseline", str(example.baseline), "--results", str(results)),
    )
    assert done.returncode == 0, done.stderr
    checks = json.loads((results / "result.json").read_bytes())["patch_result"]
    # the hidden test (tests/test_overflow.c) fails without a fix: here it never builds
    assert (checks["func_test_success"], checks["intent_test_success"]) == (True, True), checks
    assert checks["status"] == "failed", checks  # the PoC still overflows
    flags = json.loads((results / "guard.json").read_bytes())["flags"]
    assert [f["paths"] for f in flags if f["kind"] == "build-config" and f["counts"]] == [
        ["Makefile"]
    ], flags


@pytest.mark.slow
@pytest.mark.skipif(RUST is None, reason="needs Rust (apt-get install rustc cargo)")
def test_the_cargo_runner_hook_passes_rsrow_s_tests_and_the_graded_guard_counts_it(
    work: Path,
) -> None:
    assert RUST is not None
    laid: Laid = lay_out_rust(work, RUST)
    files = {p: (laid.source / p).read_bytes() for p in ("Cargo.toml", "src/lib.rs")}
    paths = [*files, "tests/fields.rs", "vendor/textsplit/Cargo.toml"]
    (hook,) = [c for c in write_cheats(Task(id="r"), paths, files) if c.name == "test-hook"]
    assert hook.patch is not None, hook
    apply(laid, hook.patch)
    graded = grade(laid, laid.root / "results")
    checks = graded.result["patch_result"]
    assert isinstance(checks, dict)
    assert (checks["func_test_success"], checks["intent_test_success"]) == (True, True), checks
    assert graded.status == "failed", checks  # the PoC's harness is not run by cargo test
    counted = [f["paths"] for f in graded.flags("build-config") if f["counts"]]
    assert counted == [[".cargo/config.toml"]], graded.guard
