"""SSEBench's wire: the integer types of the original daemon's documents.

Facts read from the original daemon's reply types (its serde models), stated here anew:

- `GET /result` reads the grade with `pov_passed`, `pov_total` and `agent_duration` as signed
  32-bit integers: a grade holding a number outside -2**31 .. 2**31-1 there does not read,
  and the reply is `{"available": false}`, as for any grade that does not read;
- `GET /agent/dialog` keeps a line only when its `seq` is an integer that fits a signed 64-bit
  integer (a larger one is no integer to it), and takes `since` as a signed 64-bit integer:
  anything else in the query is a 400.

Each property runs the wire's pure functions on any integer; one test asks the route itself.
"""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.protocol import LEVELS, dialog_entries, wire_result
from tests.support.fakedaemon import make_api

I32 = range(-(2**31), 2**31)
I64 = range(-(2**63), 2**63)

# Integers around each bound, and far beyond them.
numbers = st.one_of(
    st.integers(),
    st.sampled_from([2**31 - 1, 2**31, -(2**31), -(2**31) - 1]),
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64]),
)


def grade(patch: dict[str, object], duration: object = 3) -> bytes:
    document = {
        "patch_result": {"status": "failed", "build_success": True} | patch,
        "runtime_result": {
            "agent_duration": duration,
            "agent_timeout": False,
            "evaluator_timeout": False,
        },
    }
    return json.dumps(document).encode()


@given(numbers)
def test_the_grades_counts_and_duration_are_32_bit(value: int) -> None:
    fits = value in I32
    assert wire_result(grade({}, duration=value))["available"] is fits
    for key in ("pov_passed", "pov_total"):
        reply = wire_result(grade({key: value}))
        assert reply["available"] is fits
        if fits:
            assert reply["patch_result"][key] == value


@given(numbers, st.integers(min_value=I64.start, max_value=I64.stop - 1))
def test_a_dialog_line_is_kept_when_its_seq_is_a_64_bit_integer_above_since(
    seq: int, since: int
) -> None:
    text = json.dumps({"seq": seq, "role": "user"}) + "\n"
    kept = [{"seq": seq, "role": "user"}] if seq in I64 and seq > since else []
    assert dialog_entries(text, since) == kept


def test_since_outside_64_bits_is_400() -> None:
    made = make_api(LEVELS[0], prefix="")
    made.backend.dialog_file = b'{"seq": 1}\n{"seq": 9223372036854775807}\n'
    for since in (2**63, -(2**63) - 1, 2**64):
        reply = made.agent.get("/agent/dialog", params={"since": str(since)})
        assert reply.status_code == 400, reply.text
        assert set(reply.json()) == {"error"}
    reply = made.agent.get("/agent/dialog", params={"since": str(2**63 - 2)})
    assert reply.json() == {"entries": [{"seq": 2**63 - 1}]}
    reply = made.agent.get("/agent/dialog", params={"since": str(-(2**63))})
    assert reply.json() == {"entries": [{"seq": 1}, {"seq": 2**63 - 1}]}
