"""The archive's gzip: every piece decompresses to what it was, compressed the way that pays."""

from __future__ import annotations

import gzip
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from interpreters.real.archive.compression import _PIECE, _level, gzip_members

_SOURCE = b"""def parse(line: str) -> tuple[str, str]:
    key, _, value = line.partition("=")
    return key.strip(), value.strip()
"""


@settings(max_examples=50)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40_000),
            st.builds(lambda n: _SOURCE * n, st.integers(0, 2000)),
            st.builds(
                lambda seed, n: random.Random(seed).randbytes(n),
                st.integers(),
                st.integers(0, 1 << 20),
            ),
        ),
        max_size=4,
    ),
    st.sampled_from([0, 1, 6]),
)
def test_a_block_isgzip_memberss_of_exactly_its_bytes(parts: list[bytes], level: int) -> None:
    data = b"".join(parts)
    packed = gzip_members(data, level)
    assert gzip.decompress(packed) == data


def test_a_piece_is_stored_unless_deflate_halves_it() -> None:
    noise = random.Random(1).randbytes(_PIECE)
    assert _level(noise, 1) == 0  # git's objects, media: nothing to gain
    rng = random.Random(2)
    text = bytes(rng.choice(b"abcdefghijklmnopqrstuvwxyz_(){};= \n") for _ in range(_PIECE))
    assert _level(text, 1) == 0  # dense text saves about a quarter only
    code = (_SOURCE * (_PIECE // len(_SOURCE) + 1))[:_PIECE]
    assert _level(code, 1) == 1
    assert _level(code, 0) == 0
    assert _level(noise[:1000], 6) == 6  # too short to judge
    packed = gzip_members(noise + code, 1)
    assert len(packed) < len(noise) + len(code) // 3  # the code shrank, the noise grew little
