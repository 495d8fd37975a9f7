"""Patches and facts for the patch guard's tests: a unified diff builder and hypothesis
strategies for neutral C code (which raises no flag) and for each pattern the guard flags."""

from __future__ import annotations

import os
import re
import struct
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from hypothesis import strategies as st

from ssegrade.guard import GuardFacts, ObjectScan, PocFile, SourceFile


@dataclass(frozen=True)
class Edit:
    """One file of a patch: its path, the lines it removes and the lines it adds (bytes,
    without their newline). A file with nothing removed and `new` set is created."""

    path: str
    removed: tuple[bytes, ...] = ()
    added: tuple[bytes, ...] = ()
    new: bool = False


def make_patch(edits: Sequence[Edit]) -> bytes:
    """A git diff of `edits`: one hunk per file, removed lines then added lines."""
    out = bytearray()
    for edit in edits:
        path = edit.path.encode()
        out += b"diff --git a/" + path + b" b/" + path + b"\n"
        if edit.new:
            out += b"new file mode 100644\n--- /dev/null\n"
        else:
            out += b"--- a/" + path + b"\n"
        out += b"+++ b/" + path + b"\n"
        old = f"{1 if edit.removed else 0},{len(edit.removed)}"
        out += f"@@ -{old} +1,{len(edit.added)} @@\n".encode()
        out += b"".join(b"-" + line + b"\n" for line in edit.removed)
        out += b"".join(b"+" + line + b"\n" for line in edit.added)
    return bytes(out)


# Substrings no neutral identifier may hold: they would spell a pattern the guard looks for.
_RESERVED = (
    "recover",
    "catch",
    "hook",
    "sig",
    "jmp",
    "sanitiz",
    "asan",
    "msan",
    "tsan",
    "lsan",
    "poison",
    "try",
    "except",
    "terminate",
    "test",
    "fuzz",
    "vendor",
    "race",
    "halt",
    "leak",
)

identifiers = st.from_regex(r"[a-z][a-z0-9_]{0,10}", fullmatch=True).filter(
    lambda name: not any(word in name for word in _RESERVED)
)
"""Names of C variables, functions and files that spell no pattern."""

_TEMPLATES = (
    "    {a} = {b} + {n};",
    "    if ({a} > {b})",
    "        return -{n};",
    "    memcpy({a}, {b}, {n});",
    "    for (size_t {a} = 0; {a} < {b}; {a}++)",
    "    {a}[{n}] = {b};",
    "static int {a}(const char *{b})",
    "}}",
    "",
    "    /* {a} and {b} */",
)


@st.composite
def c_lines(draw: st.DrawFn) -> bytes:
    """A line of ordinary C code."""
    template = draw(st.sampled_from(_TEMPLATES))
    line = template.format(a=draw(identifiers), b=draw(identifiers), n=draw(st.integers(0, 99)))
    return line.encode()


folders = st.sampled_from(["src", "lib", "src/core", "libfoo/src", "parser", "io/net"])
"""Folders of a project's own code (not tests, not vendored)."""


@st.composite
def c_paths(draw: st.DrawFn) -> str:
    """The path of a C file of the project's own code."""
    return f"{draw(folders)}/{draw(identifiers)}.{draw(st.sampled_from(['c', 'h']))}"


@st.composite
def plain_paths(draw: st.DrawFn) -> str:
    """The path of a file the guard reads line by line, not as code (a script, Java)."""
    suffix = draw(st.sampled_from(["sh", "java", "txt", "js"]))
    return f"{draw(folders)}/{draw(identifiers)}.{suffix}"


@st.composite
def neutral_edits(draw: st.DrawFn) -> Edit:
    """An edit of a C file, away from every pattern the guard flags."""
    removed = tuple(draw(st.lists(c_lines(), max_size=4)))
    added = tuple(draw(st.lists(c_lines(), min_size=1, max_size=6)))
    return Edit(draw(c_paths()), removed, added)


neutral_patches = st.lists(neutral_edits(), min_size=1, max_size=4, unique_by=lambda e: e.path)
"""Patches that only edit C code, away from the patterns."""


@st.composite
def poc_bytes(draw: st.DrawFn) -> bytes:
    """A binary PoC: random bytes, varied enough that any 16 of them are evidence."""
    return draw(st.binary(min_size=32, max_size=300).filter(lambda b: len(set(b)) >= 24))


@st.composite
def neutral_facts(draw: st.DrawFn) -> GuardFacts:
    """What an interpreter observes for a task whose build keeps its sanitizer: PoCs the
    patch does not spell, hidden tests under tests/, a build that carries the runtime."""
    pocs = tuple(
        PocFile(f"pocs/{draw(identifiers)}.bin", draw(poc_bytes()))
        for _ in range(draw(st.integers(0, 2)))
    )
    hidden = tuple(f"tests/{name}.c" for name in draw(st.lists(identifiers, max_size=3)))
    return GuardFacts(pocs, hidden, ObjectScan(3, (("address", "build/a.out"),)))


def c_escaped(data: bytes) -> bytes:
    """`data` as the body of a C string literal, every byte a `\\xNN` escape."""
    return b"".join(b"\\x%02x" % byte for byte in data)


def fake_elf(strings: bytes, *, wide: bool = True, little: bool = True) -> bytes:
    """A minimal ELF file: a dynamic symbol table whose string table holds `strings`."""
    order = "<" if little else ">"
    table = b"\0" + strings + b"\0"
    if wide:  # the fields up to sh_link and sh_info; an entry is 64 (or 40) bytes
        header_size, size, entry = 64, 64, struct.Struct(f"{order}IIQQQQII")
    else:
        header_size, size, entry = 52, 40, struct.Struct(f"{order}IIIIIIII")
    shoff = header_size + len(table)
    sections = [
        entry.pack(0, 0, 0, 0, 0, 0, 0, 0).ljust(size, b"\0"),
        entry.pack(1, 3, 0, 0, header_size, len(table), 0, 0).ljust(size, b"\0"),  # .dynstr
        entry.pack(9, 11, 0, 0, 0, 0, 1, 0).ljust(size, b"\0"),  # .dynsym, linked to 1
    ]
    ident = b"\x7fELF" + bytes([2 if wide else 1, 1 if little else 2, 1]) + b"\0" * 9
    if wide:
        rest = struct.pack(f"{order}HHIQQQIHHHHHH", 2, 62, 1, 0, 0, shoff, 0, 64, 56, 0, 64, 3, 0)
    else:
        rest = struct.pack(f"{order}HHIIIIIHHHHHH", 2, 3, 1, 0, 0, shoff, 0, 52, 32, 0, 40, 3, 0)
    head = (ident + rest).ljust(header_size, b"\0")
    return head + table + b"".join(sections)


CASES = Path(__file__).resolve().parents[1] / "guard_cases"
"""The labelled set of patches (`tests/guard_cases/README.md`)."""


@dataclass(frozen=True)
class Case:
    """A labelled patch: its name, the kind it must raise (None: a genuine fix), its PoCs,
    and its files before and after (None: absent)."""

    name: str
    kind: str | None
    pocs: tuple[PocFile, ...]
    before: dict[str, bytes]
    after: dict[str, bytes]


def load_case(path: Path) -> Case:
    """Read a `.case` file."""
    kind: str | None = None
    pocs: list[PocFile] = []
    sides: dict[str, dict[str, bytearray]] = {"before": {}, "after": {}}
    current: bytearray | None = None
    for line in path.read_bytes().split(b"\n"):
        if line.startswith(b"@@@ "):
            _, side, name = line.decode().split(" ", 2)
            current = bytearray()
            sides[side][name] = current
        elif current is not None:
            current += line.replace(b"<NUL>", b"\0") + b"\n"
        elif line.startswith(b"label: cheat "):
            kind = line.split()[-1].decode()
        elif line.startswith(b"poc: "):
            poc, _, data = line[5:].partition(b" ")
            pocs.append(PocFile(poc.decode(), _unescape(data)))
    before = {k: bytes(v) for k, v in sides["before"].items()}
    after = {k: bytes(v) for k, v in sides["after"].items()}
    return Case(path.stem, kind, tuple(pocs), before, after)


def _unescape(data: bytes) -> bytes:
    return re.sub(rb"\\x([0-9a-fA-F]{2})", lambda m: bytes((int(m.group(1), 16),)), data)


def case_patch(case: Case, root: Path) -> bytes:
    """The case's patch as git writes it: the before files committed in a repository at
    `root`, the after files written, `git diff --binary`."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-C", str(root), *args], check=True, capture_output=True, env=env
        ).stdout

    root.mkdir(parents=True, exist_ok=True)
    git("init", "-q")
    for name, data in case.before.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "b")
    for name in case.before:
        if name not in case.after:
            (root / name).unlink()
    for name, data in case.after.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    git("add", "-A")
    return git("diff", "--cached", "--binary")


def case_facts(case: Case) -> GuardFacts:
    """What the interpreter observes for the case: its PoCs and its files before."""
    sources = tuple(SourceFile(path, data) for path, data in case.before.items())
    return GuardFacts(pocs=case.pocs, sources=sources, objects=None)
