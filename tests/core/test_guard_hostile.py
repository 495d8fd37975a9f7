"""The guard reads hostile code: macros that multiply, calls that never close, text that
almost looks like C. Each must cost seconds at most, never memory without bound."""

from __future__ import annotations

import time

from ssegrade import Task
from ssegrade.guard import guard
from ssegrade.guard._syntax import expand_c
from tests.support.guardkit import Edit, make_patch

TASK = Task(id="t", sanitizer="address")


def test_a_macro_bomb_is_not_expanded_without_bound() -> None:
    bomb = [b"#define A0 x" + b" x" * 4000]
    bomb += [b"#define A%d A%d A%d A%d A%d" % (n, n - 1, n - 1, n - 1, n - 1) for n in range(1, 9)]
    code = b"\n".join([*bomb, b"int v = A8;", b"void f(void) { signal(SIGSEGV, h); }"])
    start = time.perf_counter()
    expanded = expand_c("c", code)
    assert len(expanded) <= 64 << 20
    assert "crash-handler" in {
        f.kind for f in guard(make_patch([Edit("a.c", (), tuple(code.split(b"\n")))]), TASK)
    }
    assert time.perf_counter() - start < 30


def test_calls_that_never_close_cost_little() -> None:
    code = b"#define J(a, b) a##b\n" + b"J(" * 20000
    start = time.perf_counter()
    expand_c("c", code)
    assert time.perf_counter() - start < 5


def test_text_that_almost_reads_as_c_is_judged_quickly() -> None:
    from ssegrade.guard._reading import _text_language

    start = time.perf_counter()
    assert _text_language(b"int " * 16000) is None
    assert time.perf_counter() - start < 2


def test_many_calls_in_one_huge_function_cost_its_size_once() -> None:
    from ssegrade.guard._code import read_code

    calls = b"    std::panic::catch_unwind(|| 1);\n" * 20000
    go = b"package a\nfunc f() {\n" + b"\tdefer func() { recover() }()\n" * 20000 + b"}\n"
    start = time.perf_counter()
    rust = read_code("rust", "a.rs", b"fn f() {\n" + calls + b"}\n")
    assert len(rust.findings) == 20000
    assert len(read_code("go", "a.go", go).findings) == 20000
    assert time.perf_counter() - start < 20
