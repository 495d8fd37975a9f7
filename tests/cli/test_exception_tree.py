"""One exception tree: every exception class ssegrade defines, in the core and in the
interpreters, derives from `ssegrade.SsegradeError`, and one type alone is called
`Interrupted`."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from pathlib import Path

import click

import ssegrade
from ssegrade import SsegradeError

TOP = Path(__file__).resolve().parents[2]

BY_DESIGN = {"ssegrade.trace._replay.Diverged"}
"""A `BaseException` on purpose: the grading program turns any `Exception` into a grade."""


def _modules() -> list[str]:
    names = []
    for package in ("ssegrade", "interpreters"):
        for info in pkgutil.walk_packages([str(TOP / package)], prefix=f"{package}."):
            names.append(info.name)
    return names


def _defined_classes() -> list[type]:
    found: list[type] = []
    for name in _modules():
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as missing:  # an extra not installed here (ray)
            if (missing.name or "").partition(".")[0] != "ray":
                raise
            continue
        for _, value in inspect.getmembers(module, inspect.isclass):
            if value.__module__ == name:
                found.append(value)
    return found


def test_every_exception_of_ssegrade_is_an_ssegrade_error() -> None:
    outside = [
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _defined_classes()
        if issubclass(cls, BaseException)
        and not issubclass(cls, SsegradeError)
        and f"{cls.__module__}.{cls.__qualname__}" not in BY_DESIGN
        and not issubclass(cls, click.ClickException)  # the command line's, click's own
    ]
    assert outside == []


def test_the_base_is_public_and_an_exception() -> None:
    assert "SsegradeError" in ssegrade.__all__
    assert issubclass(SsegradeError, Exception)


def test_one_type_alone_is_called_interrupted() -> None:
    called = sorted(
        f"{cls.__module__}.{cls.__qualname__}"
        for cls in _defined_classes()
        if "Interrupted" in cls.__qualname__
    )
    assert called == ["interpreters.app.setup.errors.Interrupted"]


def test_the_errors_keep_their_other_bases() -> None:
    """Behaviour stays: a caller catching `ValueError` or `OSError` still catches these."""
    from interpreters.app.setup.errors import InputError
    from interpreters.real.runner.output import LogWriteError
    from ssegrade.internal.result import ResultError

    assert issubclass(InputError, ValueError)
    assert issubclass(ResultError, ValueError)
    assert issubclass(LogWriteError, OSError)
