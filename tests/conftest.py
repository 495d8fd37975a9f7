"""Shared test settings: hypothesis profiles and a scrubbed environment."""

from __future__ import annotations

import glob
import os
from collections.abc import Generator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis.configuration import set_hypothesis_home_dir

# Hypothesis keeps its examples and caches outside the checkout (by default `.hypothesis/` in
# the current folder): the suite leaves no file there.
if not os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
    set_hypothesis_home_dir(Path.home() / ".cache" / "ssegrade-tests" / "hypothesis")

settings.register_profile("thorough", max_examples=2000, deadline=None)
settings.register_profile("dev", max_examples=100, deadline=None)
settings.register_profile(
    "ci",
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

_SCRUBBED_PREFIXES = ("GIT_", "SSE_")
_SCRUBBED = {"TIMEOUT", "AGENT_DURATION", "AGENT_EXIT_STATUS", "MCP_LOG_DIR"}


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test sees the caller's git or ssegrade settings."""
    for name in list(os.environ):
        if name.startswith(_SCRUBBED_PREFIXES) or name in _SCRUBBED:
            monkeypatch.delenv(name)


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_runtestloop(session: pytest.Session) -> Generator[None, object, object]:
    """After the tests, before coverage combines its data files (its own wrapper around this
    hook is further out): drop the files no process finished writing. A test that kills a
    measured process with SIGKILL (the kill and interrupt tests do, on purpose) can catch it
    inside coverage's save; the half-written file holds nothing coverage could use, and
    combining it printed a warning at the end of a green suite."""
    try:
        return (yield)
    finally:
        if not hasattr(session.config, "workerinput"):  # the controller, or a run without xdist
            _drop_unfinished_coverage_data()


def _drop_unfinished_coverage_data() -> None:
    named = os.environ.get("COVERAGE_FILE")
    if not named:
        return
    from coverage import CoverageData  # only when coverage measures
    from coverage.exceptions import DataError

    base = Path(named)
    for data in base.parent.glob(f"{glob.escape(base.name)}.*"):
        try:
            CoverageData(str(data)).read()
        except DataError:
            data.unlink(missing_ok=True)
