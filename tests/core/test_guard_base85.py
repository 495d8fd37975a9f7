"""The base85 lines of a git binary patch (`ssegrade.guard._diff`) decoded at once: the same
bytes as decoding them line by line, for any content and any damage to a line."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard._diff import _literal_bytes


def git_lines(data: bytes) -> list[bytes]:
    """`data` as git writes a binary patch's lines: 52 bytes a line, a letter for how many."""
    lines = []
    for start in range(0, len(data), 52):
        chunk = data[start : start + 52]
        size = len(chunk)
        letter = bytes([64 + size if size <= 26 else 96 + size - 26])
        lines.append(letter + base64.b85encode(chunk, pad=True))
    return lines


def line_by_line(lines: list[bytes], start: int) -> tuple[bytes, int]:
    """The reference: each line decoded alone, up to the first that is not base85."""
    data, i = bytearray(), start
    while i < len(lines) and lines[i]:
        size = lines[i][0]
        count = size - 64 if 65 <= size <= 90 else size - 96 + 26 if 97 <= size <= 122 else -1
        if count <= 0:
            break
        try:
            data += base64.b85decode(lines[i][1:])[:count]
        except ValueError:
            break
        i += 1
    return bytes(data), i


@given(
    data=st.binary(max_size=600),
    damage=st.none() | st.tuples(st.integers(0, 20), st.integers(0, 70), st.binary(max_size=2)),
    tail=st.sampled_from([[], [b""], [b"", b"literal 0"]]),
)
def test_decoding_at_once_is_decoding_line_by_line(
    data: bytes, damage: tuple[int, int, bytes] | None, tail: list[bytes]
) -> None:
    lines = [b"GIT binary patch", b"literal 9", *git_lines(data), *tail]
    if damage is not None and len(lines) > 2:
        row, column, new = damage
        row = 2 + row % (len(lines) - 2)
        line = lines[row]
        lines[row] = line[:column] + new + line[column + len(new) :]

    assert _literal_bytes(lines, 2) == line_by_line(lines, 2)
    if damage is None:
        assert _literal_bytes(lines, 2)[0] == data
