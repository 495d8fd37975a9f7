"""A light first look at `config.yaml`: the YAML, and each key's presence and type, judged
without the task model, so that a rejected config is said before pydantic loads.

Pure core. `config_problem` answers the message `ssegrade.internal.task.parse_task` would give for
the config's first problem, or None when it sees none, or when the first value it cannot
judge as surely as the model comes before any problem (a set, bytes, a key that is not a
string): the model then decides. It never refuses a config the model takes. Its rules are
the model's (`ssegrade.internal.task`), walked in the model's field order, as the model reports its
first error; `tests/core/test_start_task_shape.py` holds the two messages equal.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import PurePosixPath
from typing import Final

import yaml

from ssegrade.internal.errors import SsegradeError

__all__ = ["config_problem"]

_ID = re.compile(r"^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$")
"""`ssegrade.internal.task`'s task id (the same pattern)."""


class _Unsure(SsegradeError):
    """A value whose verdict only the model gives (caught in `config_problem`)."""


_PLAIN = (str, int, float, bool, list, dict, date, type(None))
"""The values YAML gives that every rule below judges as the model does."""


def _plain(value: object) -> None:
    if not isinstance(value, _PLAIN):
        raise _Unsure


def _inside(path: str) -> str | None:
    """`ssegrade.internal.task._inside`'s complaint about a path, or None."""
    if not path:
        return "must not be empty"
    if "\x00" in path:
        return "must not contain NUL"
    if path.startswith("/"):
        return f"'{path}' must be relative to the task folder"
    if ".." in PurePosixPath(path).parts:
        return f"'{path}' must not contain '..' (it must stay in the task folder)"
    return None


def _string(value: object) -> str | None:
    _plain(value)
    return None if isinstance(value, str) else "Input should be a valid string"


def _optional_string(value: object) -> str | None:
    return None if value is None else _string(value)


def _optional_path(value: object) -> str | None:
    if value is None:
        return None
    return _string(value) or _inside(str(value))


def _strings(item: Callable[[object], str | None]) -> Callable[[object], Iterator[tuple[str, str]]]:
    """A tuple of values each checked by `item`: (location suffix, message) per problem."""

    def check(value: object) -> Iterator[tuple[str, str]]:
        _plain(value)
        if not isinstance(value, list):
            yield "", "Input should be a valid tuple"
            return
        for index, one in enumerate(value):
            why = item(one)
            if why is not None:
                yield f"[{index}]", why

    return check


Rule = Callable[[object], Iterator[tuple[str, str]]]


def _one(check: Callable[[object], str | None]) -> Rule:
    def rule(value: object) -> Iterator[tuple[str, str]]:
        why = check(value)
        if why is not None:
            yield "", why

    return rule


def _section(name: str, key_name: str, fields: dict[str, Rule]) -> Rule:
    """A closed section (`Scripts`, `Files`, `TaskDescription`, the value of `key_name`): a
    mapping, its fields in order, then its unknown keys."""

    def rule(value: object) -> Iterator[tuple[str, str]]:
        _plain(value)
        if not isinstance(value, dict):
            yield "", f"Input should be a valid dictionary or instance of {name}"
            return
        if any(not isinstance(key, str) for key in value):
            raise _Unsure
        for key, check in fields.items():
            if key in value:
                for where, why in check(value[key]):
                    yield f".{key}{where}", why
        for key in value:
            if key not in fields:
                near = difflib.get_close_matches(key, tuple(fields), n=1, cutoff=0.5)
                hint = f" (did you mean {key_name}.{near[0]}?)" if near else ""
                yield f".{key}", f"unknown key{hint}"

    return rule


def _null_is_empty(rule: Rule) -> Rule:
    def check(value: object) -> Iterator[tuple[str, str]]:
        return iter(()) if value is None else rule(value)

    return check


_SCRIPTS: Final = _section(
    "Scripts", "scripts", {key: _one(_optional_path) for key in ("build", "run", "test")}
)
_FILES: Final = _section(
    "Files",
    "files",
    {
        "poc": _null_is_empty(_strings(lambda item: _string(item) or _inside(str(item)))),
        **{
            key: _one(_optional_path)
            for key in ("future_test", "patch", "security_test", "intent_test")
        },
    },
)
_DESCRIPTION: Final = _section(
    "TaskDescription",
    "task_description",
    {
        "issue": _one(_optional_string),
        "bug_description": _one(_optional_string),
        "crash_report": _strings(_string),
    },
)


def _id(value: object) -> str | None:
    why = _string(value)
    if why is None and (len(str(value)) > 128 or not _ID.match(str(value))):
        return f"'{value}' is not a valid task id"
    return why


def _blank_is_none(value: object) -> str | None:
    return None if isinstance(value, str) and not value.strip() else _optional_string(value)


_TASK: Final[dict[str, Rule]] = {
    "id": _one(_id),
    "project": _one(_optional_string),
    "language": _one(_optional_string),
    "source": _one(_optional_string),
    "scripts": _null_is_empty(_SCRIPTS),
    "files": _null_is_empty(_FILES),
    "task_description": _null_is_empty(_DESCRIPTION),
    "sanitizer": _one(_blank_is_none),
}
"""`ssegrade.internal.task.Task`'s fields, in its order."""


def config_problem(data: bytes) -> str | None:
    """The one line `ssegrade.internal.task.parse_task` would refuse `config.yaml`'s bytes with, or
    None (no problem seen, or one only the model judges).

    >>> config_problem(b"id: t\\nscripts: {build: 3}")
    'config.yaml: scripts.build: Input should be a valid string'
    >>> config_problem(b"scripts: {}")
    'config.yaml: id: required key is missing'
    >>> config_problem(b"id: t\\nscripts: {build: build.sh}") is None
    True
    """
    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        return f"config.yaml: not valid YAML{line}"
    if not isinstance(raw, dict):
        return "config.yaml: expected a mapping of keys"
    try:
        for key, rule in _TASK.items():
            if key not in raw:
                if key == "id":
                    return "config.yaml: id: required key is missing"
                continue
            for where, why in rule(raw[key]):
                return f"config.yaml: {key}{where}: {why}"
    except _Unsure:
        return None
    return None
