"""One way for a test to wait for something a real process, file or socket will do."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_until(
    predicate: Callable[[], T | None],
    what: str,
    timeout: float = 60,
    interval: float = 0.02,
    detail: Callable[[], object] | None = None,
) -> T:
    """Call `predicate` every `interval` seconds until it answers something true, and return
    that answer; after `timeout` seconds, fail naming `what` was awaited (and `detail()`, what
    the process under test said, when given). The predicate may itself assert, e.g. that the
    process it waits on still runs: its failure ends the wait at once."""
    deadline = time.monotonic() + timeout
    while True:
        answer = predicate()
        if answer:
            return answer
        if time.monotonic() >= deadline:
            said = f":\n{detail()}" if detail is not None else ""
            raise AssertionError(f"waited {timeout:g} s for {what}, in vain{said}")
        time.sleep(interval)
