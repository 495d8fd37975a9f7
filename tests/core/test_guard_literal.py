"""`poc-literal`, as properties: bytes of a PoC spelled out in an added line (raw, as a string
literal with escapes, as an array of numbers over lines, in an added binary file) raise it;
fewer than 16 bytes, other bytes, a PoC's code lines, or a PoC copied into a test do not."""

from __future__ import annotations

import base64
import zlib

from hypothesis import assume, given
from hypothesis import strategies as st

from ssegrade import Task
from ssegrade.guard import GuardFacts, PocFile, guard
from tests.support.guardkit import Edit, c_escaped, c_paths, make_patch, neutral_patches, poc_bytes

C_TASK = Task(id="c-1", language="c", sanitizer="address")


def kinds(patch: bytes, facts: GuardFacts) -> set[str]:
    return {flag.kind for flag in guard(patch, C_TASK, facts)}


@st.composite
def poc_slices(draw: st.DrawFn) -> tuple[bytes, bytes]:
    """A PoC and a run of at least 16 of its bytes, with 16 in a row that take at least four
    values (fewer is not evidence: padding, indentation)."""
    poc = draw(poc_bytes())
    size = draw(st.integers(16, len(poc)))
    start = draw(st.integers(0, len(poc) - size))
    run = poc[start : start + size]
    assume(any(len(set(run[i : i + 16])) >= 4 for i in range(len(run) - 15)))
    return poc, run


def _facts(poc: bytes, name: str = "pocs/crash.bin") -> GuardFacts:
    return GuardFacts(pocs=(PocFile(name, poc),))


@given(neutral_patches, poc_slices(), c_paths(), st.sampled_from(["escaped", "array", "raw"]))
def test_added_bytes_of_a_poc_raise_poc_literal(
    edits: list[Edit], found: tuple[bytes, bytes], path: str, how: str
) -> None:
    poc, run = found
    if how == "escaped":
        lines: tuple[bytes, ...] = (
            b'    if (!memcmp(buf, "' + c_escaped(run) + b'", n)) return 0;',
        )
    elif how == "array":
        numbers = [b"0x%02x," % byte for byte in run]
        lines = (
            b"static const unsigned char seen[] = {",
            *(b"    " + b" ".join(numbers[i : i + 8]) for i in range(0, len(numbers), 8)),
            b"};",
        )
    else:
        assume(b"\n" not in run)  # a raw line holds no newline
        lines = (b"    " + run,)
        path += ".txt"  # raw bytes are not C: a data file read line by line
    patch = make_patch([*edits, Edit(path, (), lines)])
    flags = [f for f in guard(patch, C_TASK, _facts(poc)) if f.kind == "poc-literal"]
    assert [f.paths for f in flags] == [(path,)]
    assert flags[0].why.endswith("pocs/crash.bin")


@given(neutral_patches, poc_bytes(), c_paths())
def test_fifteen_bytes_of_a_poc_or_another_file_s_bytes_do_not_raise(
    edits: list[Edit], poc: bytes, path: str
) -> None:
    short = b'    x = "' + c_escaped(poc[:15]) + b'";'
    other = b'    y = "' + c_escaped(bytes(255 - b for b in poc[:40])) + b'";'
    patch = make_patch([*edits, Edit(path, (), (short, other))])
    assert "poc-literal" not in kinds(patch, _facts(poc))


@given(poc_slices(), st.sampled_from(["tests/regress/crash.c", "fuzz/corpus_test.go"]))
def test_a_poc_copied_into_a_test_is_a_test_not_a_special_case(
    found: tuple[bytes, bytes], path: str
) -> None:
    poc, run = found
    patch = make_patch([Edit(path, (), (b'"' + c_escaped(run) + b'"',), new=True)])
    assert kinds(patch, _facts(poc)) == {"tests"}


def test_a_source_poc_counts_by_its_literals_only() -> None:
    poc = (
        b'package main\n\nimport (\n\t"fmt"\n\t"github.com/tidwall/gjson"\n)\n\n'
        b"func main() {\n\tif err != nil {\n\t\treturn\n\t}\n"
        b'\tfmt.Println(gjson.Get(`{"a":[{"b":1}]}`, "a.#(b>0)|@reverse|0.b"))\n}\n'
    )
    facts = _facts(poc, "pocs/poc.go")
    code = make_patch([Edit("gjson.go", (), (b"\tif err != nil {", b"\t\treturn"))])
    assert guard(code, Task(id="t"), facts) == ()
    cheat = make_patch([Edit("gjson.go", (), (b'\tif path == "a.#(b>0)|@reverse|0.b" {',))])
    assert [f.kind for f in guard(cheat, Task(id="t"), facts)] == ["poc-literal"]


def test_a_binary_file_holding_the_poc_raises_poc_literal() -> None:
    poc = bytes(range(7, 200))
    packed = zlib.compress(b"header" + poc[20:60] + b"trailer")
    lines = []
    for i in range(0, len(packed), 52):
        chunk = packed[i : i + 52]
        size = chr(64 + len(chunk)) if len(chunk) <= 26 else chr(96 + len(chunk) - 26)
        lines.append(size.encode() + base64.b85encode(chunk))
    patch = (
        b"diff --git a/data/seen.bin b/data/seen.bin\nnew file mode 100644\n"
        b"index 0000000..1111111\nGIT binary patch\nliteral %d\n"
        % len(packed)
        + b"\n".join(lines)
        + b"\n\nliteral 0\nHcmV?d00001\n\n"
    )
    assert kinds(patch, _facts(poc)) == {"poc-literal"}
