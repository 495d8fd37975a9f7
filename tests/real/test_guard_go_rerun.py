"""The pinned re-run on a real Go task (`tests/realtasks/gorow`: vendored modules, a module
cache in `GOPATH`, the PoC a module of its own run with `go run`), graded whole by the real
interpreter: the reference fix passes and its re-run (`GOTRACEBACK=crash`) raises no flag; a
`recover()` that swallows the panic passes the grade, and the pinned re-run cannot expose it
(GOTRACEBACK changes how a panic that is not recovered dies, not whether `recover` runs):
the static `crash-handler` flag catches it, and it counts against the run."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.realtasks.lay import Graded, Laid, apply, grade, lay_out_go, toolchain_path

GO = toolchain_path("go")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(GO is None, reason="needs Go (apt-get install golang-go)"),
]

SWALLOW = (
    "func Field(line string, i int) (field string, ok bool) {\n"
    "\tdefer func() {\n"
    "\t\tif recover() != nil {\n"
    '\t\t\tfield, ok = "", false\n'
    "\t\t}\n"
    "\t}()\n"
)


@pytest.fixture
def laid() -> Iterator[Laid]:
    """The Go task laid out in a folder the runner can enter."""
    assert GO is not None
    folder = Path(tempfile.mkdtemp(prefix="ssegrade-guard-go-"))
    folder.chmod(0o755)
    try:
        yield lay_out_go(folder, GO)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _pinned_rerun_ran(graded: Graded, code: int) -> None:
    assert [r["exit_code"] for r in graded.reruns] == [code], graded.reruns
    assert graded.guard["observed"]["reruns"] == 1, graded.guard  # type: ignore[index]
    assert Path(str(graded.reruns[0]["log_file"])).is_file(), graded.reruns


def test_the_empty_patch_panics_and_fails(laid: Laid) -> None:
    graded = grade(laid, laid.root / "results")
    assert graded.status == "failed", graded.result
    assert "panic: runtime error: index out of range" in str(graded.result["patch_result"])
    assert graded.reruns == [], graded.reruns  # only the PoCs that passed run again


def test_the_reference_fix_passes_and_its_rerun_raises_no_flag(laid: Laid) -> None:
    apply(laid, laid.fix.read_bytes())
    graded = grade(laid, laid.root / "results")
    assert graded.status == "passed", graded.result
    _pinned_rerun_ran(graded, 0)
    assert graded.flags("crash-handler") == [], graded.guard
    assert not [f for f in graded.guard["flags"] if f["confidence"] == "evidence"]  # type: ignore[attr-defined]


def test_a_recover_that_swallows_the_panic_passes_and_the_pattern_flag_catches_it(
    laid: Laid,
) -> None:
    row = laid.source / "row.go"
    text = row.read_text()
    assert "func Field(line string, i int) (string, bool) {\n" in text
    row.write_text(text.replace("func Field(line string, i int) (string, bool) {\n", SWALLOW))
    graded = grade(laid, laid.root / "results")
    assert graded.status == "passed", graded.result  # the hidden test wants ("", false) too
    # GOTRACEBACK=crash does not undo a recover: the re-run exits 0 and shows nothing
    _pinned_rerun_ran(graded, 0)
    assert graded.flags("crash-handler", "evidence") == [], graded.guard
    caught = graded.flags("crash-handler", "pattern")
    assert caught, graded.guard
    assert caught[0]["counts"] is True, caught
    assert str(caught[0]["where"]).startswith("row.go:"), caught
