"""The guard's side after a patch is the patch applied to the side before, in the core: any
text diff reproduces the file it describes, and a hunk that does not fit gives nothing rather
than a made-up file (property tests)."""

from __future__ import annotations

import difflib

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard import parse_diff

lines = st.lists(st.sampled_from(["int a;", "", "  x++;", "}", "/* c */", "b\tc"]), max_size=25)


def _patch(before: list[str], after: list[str], context: int) -> bytes:
    body = difflib.unified_diff(
        [f"{line}\n" for line in before],
        [f"{line}\n" for line in after],
        "a/src/x.c",
        "b/src/x.c",
        n=context,
    )
    return "".join(body).encode()


@given(lines, lines, st.integers(0, 3))
def test_any_text_diff_applied_gives_the_file_after(
    before: list[str], after: list[str], context: int
) -> None:
    patch = _patch(before, after, context)
    changes = parse_diff(patch)
    old = "".join(f"{line}\n" for line in before).encode()
    new = "".join(f"{line}\n" for line in after).encode()
    if not changes:
        assert old == new
        return
    (change,) = changes
    assert change.after(old) == new


@given(lines, lines)
def test_a_hunk_that_does_not_fit_gives_nothing(before: list[str], after: list[str]) -> None:
    patch = _patch(before, after, 2)
    changes = parse_diff(patch)
    if not changes or not change_removes_or_keeps(changes[0].hunks):
        return
    other = b"\n".join(b"different %d" % i for i in range(len(before) + 1)) + b"\n"
    assert changes[0].after(other) is None


def change_removes_or_keeps(hunks: list[tuple[int, list[bytes]]]) -> bool:
    """Whether a hunk holds a line of the side before (which a wrong file cannot match)."""
    return any(line[:1] in (b" ", b"-") for _, body in hunks for line in body)
