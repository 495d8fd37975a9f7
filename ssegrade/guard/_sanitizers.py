"""Sanitizers a task may name, and the marks their runtime leaves in what a build produces.

Pure core. A task's `sanitizer` (SSEBench spells it `sanitizer: address`) names the sanitizer
its build enables. `sanitizers_named` reads that value (`address`, `asan`, `address,undefined`,
…) into canonical names; `runtimes_for` gives, for each, the string-table entries an object
built with it carries (a symbol the instrumented code calls, or the runtime library it links):
the interpreter looks for them in the ELF files the grading build produced
(`ssegrade.internal.effects.ScanObjects`). An unknown name is not checked.
"""

from __future__ import annotations

import re

from ssegrade.guard._facts import SanitizerRuntime

__all__ = ["ALIASES", "HOOK_SYMBOLS", "RUNTIMES", "runtimes_for", "sanitizers_named"]

HOOK_SYMBOLS = (
    "__asan_default_options",
    "__ubsan_default_options",
    "__lsan_default_options",
    "__msan_default_options",
    "__tsan_default_options",
    "__hwasan_default_options",
    "__lsan_default_suppressions",
    "__asan_on_error",
    "__sanitizer_set_death_callback",
    "__asan_set_error_report_callback",
    "__asan_set_death_callback",
    "__sanitizer_set_report_path",
    "__sanitizer_set_report_fd",
    "__lsan_disable",
)
"""Symbols by which code hooks a sanitizer (its options, its report, its death): an object the
build compiled (not the runtime) that names one set it, however its source spelled it."""

RUNTIMES: dict[str, tuple[str, ...]] = {
    "address": ("__asan_init", "__asan_report_", "libasan.so", "libclang_rt.asan"),
    "hwaddress": ("__hwasan_init", "libhwasan.so", "libclang_rt.hwasan"),
    "memory": ("__msan_init", "libclang_rt.msan"),
    "thread": ("__tsan_init", "libtsan.so", "libclang_rt.tsan"),
    "undefined": ("__ubsan_handle_", "libubsan.so", "libclang_rt.ubsan"),
    "leak": ("__lsan_", "liblsan.so", "libclang_rt.lsan"),
}
"""Canonical sanitizer name → prefixes of string-table entries (symbol names, `DT_NEEDED`
library names) that an object built with it carries; one is enough."""

ALIASES: dict[str, str] = {
    "asan": "address",
    "addresssanitizer": "address",
    "hwasan": "hwaddress",
    "msan": "memory",
    "memorysanitizer": "memory",
    "tsan": "thread",
    "threadsanitizer": "thread",
    "ubsan": "undefined",
    "undefinedbehaviorsanitizer": "undefined",
    "lsan": "leak",
    "leaksanitizer": "leak",
}
"""Other spellings of the canonical names (compared in lower case)."""

_SPLIT = re.compile(r"[\s,+;/|]+")


def sanitizers_named(value: str | None) -> tuple[str, ...]:
    """The known sanitizers a task's `sanitizer` value names, canonical, in order, once each.

    >>> sanitizers_named("address"), sanitizers_named("ASan, UBSan"), sanitizers_named("none")
    (('address',), ('address', 'undefined'), ())
    """
    names: list[str] = []
    for word in _SPLIT.split((value or "").strip().lower()):
        name = ALIASES.get(word, word.removeprefix("-fsanitize="))
        if name in RUNTIMES and name not in names:
            names.append(name)
    return tuple(names)


def runtimes_for(value: str | None) -> tuple[SanitizerRuntime, ...]:
    """What to look for in the grading build's objects for a task's `sanitizer` value.

    >>> runtimes_for("memory")
    (SanitizerRuntime(name='memory', markers=('__msan_init', 'libclang_rt.msan')),)
    """
    return tuple(SanitizerRuntime(name, RUNTIMES[name]) for name in sanitizers_named(value))
