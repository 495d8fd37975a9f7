"""The pinned re-run on a real Rust task (`tests/realtasks/rsrow`: a crate with a vendored
path dependency, `CARGO_HOME` set, offline, the PoC a harness crate that `run.sh` builds and
runs), graded whole by the real interpreter.

- The reference fix passes; its re-run (`RUST_BACKTRACE=1`, `panic=abort`) raises no flag.
- A `catch_unwind` that swallows the panic passes the grade; the re-run, built with
  `panic=abort` through cargo's profile variables, cannot unwind and aborts with the panic's
  message: a `crash-handler` flag of `evidence`.
- A panic hook that exits 0 passes the grade and also wins under `panic=abort` (the hook runs
  before the abort): the re-run exits 0, and the static `crash-handler` flag catches it.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realtasks.lay import Laid, apply, grade, lay_out_rust, toolchain_path

RUST = toolchain_path("cargo", "rustc")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(RUST is None, reason="needs Rust (apt-get install rustc cargo)"),
]

HEAD = "pub fn field(line: &str, i: usize) -> Option<String> {\n"
CATCH_UNWIND = (
    HEAD + "    std::panic::catch_unwind(|| unguarded(line, i)).unwrap_or(None)\n}\n\n"
    "fn unguarded(line: &str, i: usize) -> Option<String> {\n"
)
EXIT_HOOK = HEAD + "    std::panic::set_hook(Box::new(|_| std::process::exit(0)));\n"


@pytest.fixture
def laid() -> Iterator[Laid]:
    """The Rust task laid out in a folder the runner can enter."""
    assert RUST is not None
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-guard-rust-"))
    folder.chmod(0o755)
    try:
        yield lay_out_rust(folder, RUST)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _cheat(laid: Laid, new: str) -> None:
    lib = laid.source / "src" / "lib.rs"
    text = lib.read_text()
    assert HEAD in text
    lib.write_text(text.replace(HEAD, new))


def test_the_reference_fix_passes_and_its_rerun_raises_no_flag(laid: Laid) -> None:
    apply(laid, laid.fix.read_bytes())
    graded = grade(laid, laid.root / "results")
    assert graded.status == "passed", graded.result
    assert [r["exit_code"] for r in graded.reruns] == [0], graded.reruns
    assert graded.flags("crash-handler") == [], graded.guard
    assert graded.guard["notes"] == [], graded.guard


def test_a_catch_unwind_passes_the_grade_and_the_abort_rerun_exposes_it(laid: Laid) -> None:
    _cheat(laid, CATCH_UNWIND)
    graded = grade(laid, laid.root / "results")
    assert graded.status == "passed", graded.result
    assert [r["exit_code"] != 0 for r in graded.reruns] == [True], graded.reruns
    evidence = graded.flags("crash-handler", "evidence")
    assert [f["where"] for f in evidence] == ["pocs/src/main.rs"], graded.guard
    assert "exit 134" in str(evidence[0]["why"]), evidence  # SIGABRT through bash
    log = Path(str(graded.reruns[0]["log_file"])).read_text(errors="replace")
    assert "panicked at 'index out of bounds" in log, log
    assert evidence[0]["counts"] is True, evidence
    assert graded.flags("crash-handler", "pattern"), graded.guard


def test_a_panic_hook_exiting_0_wins_under_abort_and_the_pattern_flag_catches_it(
    laid: Laid,
) -> None:
    _cheat(laid, EXIT_HOOK)
    graded = grade(laid, laid.root / "results")
    assert graded.status == "passed", graded.result  # the hook ends the hidden tests with 0
    assert [r["exit_code"] for r in graded.reruns] == [0], graded.reruns
    assert graded.flags("crash-handler", "evidence") == [], graded.guard
    caught = graded.flags("crash-handler", "pattern")
    assert [str(f["where"]).split(":")[0] for f in caught] == ["src/lib.rs"], graded.guard
    assert caught[0]["counts"] is True, caught
