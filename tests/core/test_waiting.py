"""The tests' one wait (`tests.support.waiting.wait_until`): it returns what it waited for, names
it when it never comes, and ends at once when its predicate fails."""

from __future__ import annotations

import itertools
import time

import pytest

from tests.support.waiting import wait_until


def test_the_wait_returns_the_first_true_answer() -> None:
    calls = itertools.count()
    assert wait_until(lambda: max(next(calls) - 2, 0), "the third call", timeout=5, interval=0) == 1


def test_a_wait_in_vain_names_what_it_awaited_and_what_was_said() -> None:
    started = time.monotonic()
    with pytest.raises(AssertionError, match=r"waited 0.2 s for the mark, in vain:\nlog text"):
        wait_until(lambda: False, "the mark", timeout=0.2, interval=0.01, detail=lambda: "log text")
    assert time.monotonic() - started >= 0.2


def test_a_predicate_that_fails_ends_the_wait_at_once() -> None:
    def exited() -> bool:
        raise AssertionError("the process exited 3")

    started = time.monotonic()
    with pytest.raises(AssertionError, match="exited 3"):
        wait_until(exited, "a mark", timeout=60)
    assert time.monotonic() - started < 30
