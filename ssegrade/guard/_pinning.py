"""The pinned-options re-run: what the grader pins, and what a re-run that triggers shows.

Pure core. A PoC that passed in the grade may have passed because the patch quietened the
sanitizer or swallowed the panic (a compiled-in `__asan_default_options` returning
`exitcode=0`, a report sent to a file) rather than fixing the bug. After the checks, the
grading program runs each PoC that passed once more in the build's copy with the options
pinned in the script's environment (`pins`): for a sanitizer, `<NAME>_OPTIONS` with
`exitcode=1`, `halt_on_error=1`, `abort_on_error=0`, `log_path=stderr` (environment options
override a program's compiled-in defaults, key by key); for Go, `GOTRACEBACK=crash`; for
Rust, `RUST_BACKTRACE=1` and `panic=abort` through cargo's profile variables
(`CARGO_PROFILE_DEV_PANIC`, `CARGO_PROFILE_RELEASE_PANIC`: a run script that builds its
harness with cargo builds it so, and a `catch_unwind` cannot swallow the panic; one that runs
a binary built before is left as it was). A re-run that exits non-zero with the report's own
words in its output (`triggered`) is a flag of `confidence: evidence` (`rerun_flags`);
anything else it shows (a kill at its limit, an exit without a report) is a note. The verdict
never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ssegrade.guard._facts import Rerun
from ssegrade.guard._model import Flag, Kind
from ssegrade.guard._sanitizers import sanitizers_named

__all__ = [
    "OPTIONS",
    "RERUN_LEAST",
    "RERUN_SECONDS",
    "TAIL",
    "Pin",
    "pins",
    "rerun_flags",
    "rerun_notes",
    "triggered",
]

RERUN_SECONDS = 60.0
"""The longest one re-run may take (inside the time left of the grading)."""

RERUN_LEAST = 10.0
"""A re-run is skipped (with a note) when less than this is left of the grading's time."""

TAIL = 600
"""The most characters of a triggering re-run's output its flag quotes (the end)."""

_PINNED = "exitcode=1:halt_on_error=1:abort_on_error=0:log_path=stderr"

OPTIONS: dict[str, tuple[str, str]] = {
    "address": ("ASAN_OPTIONS", _PINNED),
    "hwaddress": ("HWASAN_OPTIONS", _PINNED),
    "memory": ("MSAN_OPTIONS", _PINNED),
    "thread": ("TSAN_OPTIONS", _PINNED),
    "undefined": ("UBSAN_OPTIONS", _PINNED + ":print_stacktrace=1"),
    "leak": ("LSAN_OPTIONS", _PINNED),
}
"""Canonical sanitizer name → the variable and the value the re-run pins."""

_REPORTS: dict[str, tuple[str, ...]] = {
    "address": ("ERROR: AddressSanitizer",),
    "hwaddress": ("ERROR: HWAddressSanitizer",),
    "memory": ("WARNING: MemorySanitizer",),
    "thread": ("WARNING: ThreadSanitizer",),
    "undefined": ("runtime error:", "ERROR: UndefinedBehaviorSanitizer"),
    "leak": ("ERROR: LeakSanitizer",),
    "go": ("panic: ", "fatal error: "),
    "rust": ("panicked at",),
}
"""What a report says: the words a triggering re-run's output holds (one is enough)."""

_GO = (("GOTRACEBACK", "crash"),)
_RUST = (
    ("RUST_BACKTRACE", "1"),
    ("CARGO_PROFILE_DEV_PANIC", "abort"),
    ("CARGO_PROFILE_RELEASE_PANIC", "abort"),
)
_LANGUAGES: dict[str, tuple[tuple[str, str], ...]] = {"go": _GO, "golang": _GO, "rust": _RUST}
"""Language → the variables its re-runs pin: Go's full traceback; Rust's backtrace, and the
panic strategy `abort` for what cargo builds in the re-run (environment settings override a
manifest's `[profile]`), so that a panic caught by `catch_unwind` aborts with its message."""


@dataclass(frozen=True, slots=True)
class Pin:
    """What a task's re-runs pin: the variables set over the script's environment, and the
    reports (sanitizer names, `go`, `rust`) whose words show that a re-run triggered."""

    env: tuple[tuple[str, str], ...]
    reports: tuple[str, ...]


def pins(sanitizer: str | None, language: str | None) -> Pin | None:
    """What to pin for a task naming `sanitizer` and `language`; None: nothing to re-run.

    >>> pins("address", "c").env
    (('ASAN_OPTIONS', 'exitcode=1:halt_on_error=1:abort_on_error=0:log_path=stderr'),)
    >>> pins(None, "Go"), pins(None, "python")
    (Pin(env=(('GOTRACEBACK', 'crash'),), reports=('go',)), None)
    >>> [name for name, _ in pins(None, "rust").env]
    ['RUST_BACKTRACE', 'CARGO_PROFILE_DEV_PANIC', 'CARGO_PROFILE_RELEASE_PANIC']
    """
    env = [OPTIONS[name] for name in sanitizers_named(sanitizer)]
    reports = list(sanitizers_named(sanitizer))
    lang = (language or "").strip().lower()
    if lang in _LANGUAGES:
        env.extend(_LANGUAGES[lang])
        reports.append("rust" if lang == "rust" else "go")
    return Pin(tuple(dict.fromkeys(env)), tuple(reports)) if env else None


def triggered(rerun: Rerun, reports: tuple[str, ...]) -> str | None:
    """The report a re-run shows it triggered (a name of `reports`), or None: it must have
    exited non-zero, not killed at its limit, with the report's words in its output.

    >>> triggered(Rerun("p", 1, output="==1==ERROR: AddressSanitizer: heap"), ("address",))
    'address'
    >>> triggered(Rerun("p", 0, output="ERROR: AddressSanitizer"), ("address",))
    """
    if rerun.code == 0 or rerun.killed or rerun.skipped is not None:
        return None
    return next(
        (name for name in reports if any(w in rerun.output for w in _REPORTS.get(name, ()))),
        None,
    )


def _tail(text: str) -> str:
    text = "".join(c if c.isprintable() or c == "\n" else "?" for c in text.strip())
    cut = text[-TAIL:]
    return ("…" + cut if len(text) > TAIL else cut).replace("\n", " ⏎ ")


def rerun_flags(reruns: tuple[Rerun, ...], reports: tuple[str, ...]) -> list[Flag]:
    """A flag of `confidence: evidence` for each re-run that triggered: `sanitizer` for a
    sanitizer's report, `crash-handler` for a Go or Rust panic the grade did not see; `where`
    is the PoC, `why` ends with the output's tail."""
    flags = []
    for rerun in reruns:
        report = triggered(rerun, reports)
        if report is None:
            continue
        kind: Kind = "crash-handler" if report in ("go", "rust") else "sanitizer"
        what = "panics" if kind == "crash-handler" else f"raises a {report} sanitizer report"
        why = (
            f"the PoC passed in the grade, yet {what} once the grader pins the options "
            f"(exit {rerun.code}): {_tail(rerun.output)}"
        )
        flags.append(Flag(kind=kind, why=why, confidence="evidence", where=rerun.poc))
    return flags


def rerun_notes(reruns: tuple[Rerun, ...], reports: tuple[str, ...]) -> tuple[str, ...]:
    """What the re-runs that raised no flag showed, when it was not a clean pass."""
    notes = []
    for rerun in reruns:
        if rerun.skipped is not None:
            notes.append(f"the pinned re-run of {rerun.poc} did not run: {rerun.skipped}")
        elif rerun.killed:
            notes.append(f"the pinned re-run of {rerun.poc} was killed at its time limit")
        elif rerun.code != 0 and triggered(rerun, reports) is None:
            notes.append(
                f"the pinned re-run of {rerun.poc} exited {rerun.code} without a report: "
                "not flagged"
            )
    return tuple(notes)
