"""What the guard's analysis costs a grading: the parsers it loads and the regexes it compiles.

A grading is one process: what the guard loads or compiles on its first use is paid by each
grading. A patch of C files loads the C grammar alone (every grammar used to be loaded to tell
whether the parsers are there), and matching the table's paths compiles no regex (each of its
85 globs used to be compiled, about 7 ms, the largest part of the rules' time on a small
patch). Both are measured in a fresh interpreter; the glob's string matching is checked
against its regex on drawn patterns."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard._check import glob_matcher, glob_regex

ROOT = Path(__file__).resolve().parents[2]

_PATCH = (
    b"diff --git a/src/rle.c b/src/rle.c\n"
    b"--- a/src/rle.c\n+++ b/src/rle.c\n@@ -1,2 +1,3 @@\n"
    b" int decode(int n) {\n+    if (n > 8) return -1;\n     return n;\n"
)

_CHILD = """
import json, re, sys
from ssegrade import Task
from ssegrade.guard import GuardFacts, SourceFile, guard_report
globs = []
compile = re.compile
def counted(pattern, flags=0):
    if isinstance(pattern, str) and "[^/]" in pattern:
        globs.append(pattern)
    return compile(pattern, flags)
re.compile = counted
patch = sys.stdin.buffer.read()
facts = GuardFacts(sources=(SourceFile("src/rle.c", b"int decode(int n) {\\n    return n;\\n"),))
report = guard_report(patch, Task(id="t", sanitizer="address"), facts)
loaded = sorted(m for m in sys.modules if m.startswith("tree_sitter_") and "." not in m)
print(json.dumps({"grammars": loaded, "globs": len(globs), "notes": list(report.notes)}))
"""


def _fresh_guard() -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD],
        input=_PATCH,
        capture_output=True,
        cwd=ROOT,
        check=True,
        timeout=120,
    )
    seen: dict[str, object] = json.loads(done.stdout)
    return seen


def test_a_patch_of_c_files_loads_the_c_grammar_alone() -> None:
    seen = _fresh_guard()
    assert seen["grammars"] == ["tree_sitter_c"], seen
    assert seen["notes"] == [], seen  # the patch was read as code, not by paths alone


def test_the_rules_match_paths_without_compiling_a_glob() -> None:
    assert _fresh_guard()["globs"] == 0


@given(
    st.text(alphabet="ab.*?/", max_size=6),
    st.text(alphabet="ab./", max_size=8),
)
def test_a_glob_matches_as_its_regex_does(pattern: str, text: str) -> None:
    assert glob_matcher(pattern)(text) == (glob_regex(pattern).fullmatch(text) is not None)
