"""A summary's patch guard record as the report reads it (`ssegrade.report._flags.guard_flags`):
the common shapes read directly, every other one as the guard's own reader reads it."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ssegrade.guard import KINDS, flag_kinds
from ssegrade.report._flags import guard_flags

scalars = st.none() | st.booleans() | st.integers(-2, 2) | st.sampled_from(["true", "x", ""])
kinds = st.sampled_from([*KINDS, "odd-kind", "=cmd"]) | scalars
flags = st.fixed_dictionaries({}, optional={"kind": kinds, "paths": st.just(["a"])}) | scalars
guards = st.fixed_dictionaries(
    {},
    optional={
        "checked": st.booleans() | scalars,
        "flags": st.lists(flags, max_size=4) | scalars,
        "version": st.just(1),
    },
)
values: st.SearchStrategy[Any] = guards | scalars | st.lists(guards, max_size=2)


@given(values)
def test_the_report_reads_a_guard_record_as_the_guard_reads_it(doc: Any) -> None:
    """Property: for any value a summary's `guard` may hold once parsed from JSON, the
    report's flags are those `flag_kinds` gives."""
    parsed = json.loads(json.dumps(doc))
    assert guard_flags(parsed) == flag_kinds(parsed)
