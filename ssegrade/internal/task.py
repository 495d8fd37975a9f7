"""The task folder's `config.yaml`: model, parser, and which checks a task has.

Pure core: `parse_task` takes the file's bytes; checking that the named files exist is the
interpreter's job, which reports a missing one with `TaskError.missing_file`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Annotated

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, field_validator
from returns.result import Failure, Result, Success

from ssegrade.internal.checks import Check

__all__ = [
    "Check",
    "Task",
    "TaskError",
    "checks_of",
    "parse_task",
    "poc_folder",
    "support_folders",
]

_ID = re.compile(r"^[A-Za-z0-9]+(?:(?:[._]|__|-+)[A-Za-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class TaskError:
    """Why a task folder was rejected; `message` is one line naming the key and the file."""

    message: str

    @staticmethod
    def missing_file(key: str, path: str) -> TaskError:
        """The error for a config key that names a file that does not exist."""
        return TaskError(f"config.yaml: {key}: no such file '{path}'")


def _inside(path: str) -> str:
    if not path:
        raise ValueError("must not be empty")
    if "\x00" in path:
        raise ValueError("must not contain NUL")
    if path.startswith("/"):
        raise ValueError(f"'{path}' must be relative to the task folder")
    if ".." in PurePosixPath(path).parts:
        raise ValueError(f"'{path}' must not contain '..' (it must stay in the task folder)")
    return path


InsidePath = Annotated[str, AfterValidator(_inside)]


class _Open(BaseModel):
    model_config = ConfigDict(defer_build=True, frozen=True, extra="allow")


class _Closed(BaseModel):
    """A section whose keys are closed: a typo must never silently drop a check."""

    model_config = ConfigDict(defer_build=True, frozen=True, extra="forbid")


class Scripts(_Closed):
    """`scripts`: the build script, the PoC runner and the functional test script."""

    build: str | None = None
    run: str | None = None
    test: str | None = None

    @field_validator("build", "run", "test")
    @classmethod
    def _no_escape(cls, value: str | None) -> str | None:
        return None if value is None else _inside(value)


class Files(_Closed):
    """`files`: PoCs, the hidden tests and reference material."""

    poc: tuple[InsidePath, ...] = ()
    future_test: str | None = None
    patch: str | None = None
    security_test: str | None = None
    intent_test: str | None = None

    @field_validator("poc", mode="before")
    @classmethod
    def _null_is_empty(cls, value: object) -> object:
        return () if value is None else value

    @field_validator("future_test", "patch", "security_test", "intent_test")
    @classmethod
    def _no_escape(cls, value: str | None) -> str | None:
        return None if value is None else _inside(value)


class TaskDescription(_Closed):
    """`task_description`: informative only."""

    issue: str | None = None
    bug_description: str | None = None
    crash_report: tuple[str, ...] = ()


class Task(_Open):
    """A parsed `config.yaml`. Unknown keys are kept (`model_extra`) and ignored."""

    id: str
    project: str | None = None
    language: str | None = None
    source: str | None = None
    scripts: Scripts = Field(default_factory=Scripts)
    files: Files = Field(default_factory=Files)
    task_description: TaskDescription | None = None
    sanitizer: str | None = None
    """The sanitizer the build enables (`address`, …), as SSEBench's task config names it;
    the patch guard checks that the grading build still carries its runtime."""

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str) -> str:
        if len(value) > 128 or not _ID.match(value):
            raise ValueError(f"'{value}' is not a valid task id")
        return value

    @field_validator("sanitizer", mode="before")
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("scripts", "files", mode="before")
    @classmethod
    def _null_is_default(cls, value: object) -> object:
        return {} if value is None else value

    @property
    def checks(self) -> frozenset[Check]:
        """The checks this task has, from the config alone (SPEC §2).

        >>> Task(id="t", scripts=Scripts(build="b.sh", test="t.sh")).checks == {
        ...     "build", "function_test"}
        True
        """
        return checks_of(
            build=self.scripts.build,
            run=self.scripts.run,
            test=self.scripts.test,
            pocs=self.files.poc,
            future_test=self.files.future_test,
        )

    def named_files(self) -> tuple[tuple[str, str], ...]:
        """Every (key, path) the config names that must exist in the task folder."""
        named: list[tuple[str, str]] = [
            (f"scripts.{key}", path)
            for key, path in (
                ("build", self.scripts.build),
                ("run", self.scripts.run),
                ("test", self.scripts.test),
            )
            if path
        ]
        named += [(f"files.poc[{i}]", path) for i, path in enumerate(self.files.poc)]
        if self.files.future_test:
            named.append(("files.future_test", self.files.future_test))
        return tuple(named)

    def hidden_files(self) -> tuple[str, ...]:
        """Config paths of the material the runner must not see outside the check that needs
        it: scripts, PoCs, the hidden tests and the reference fix (SPEC §5)."""
        found = [
            path
            for path in (
                self.scripts.build,
                self.scripts.run,
                self.scripts.test,
                self.files.future_test,
                self.files.patch,
                self.files.security_test,
                self.files.intent_test,
            )
            if path
        ]
        return (*found, *self.files.poc)


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in PurePosixPath(path).parts if part != ".")


def poc_folder(task: Task, poc: str) -> str | None:
    """The top-level task folder staged along with PoC `poc` (a config path), or None when
    the PoC is staged alone: it sits at the top, or its folder holds hidden material other
    than PoCs (SPEC §5).

    >>> t = Task(id="t", files=Files(poc=("pocs/poc.go",), patch="fix.diff"))
    >>> poc_folder(t, "pocs/poc.go"), poc_folder(t, "./pocs/poc.go")
    ('pocs', 'pocs')
    >>> poc_folder(Task(id="t", files=Files(poc=("x/p",), future_test="x/t.diff")), "x/p")
    >>> poc_folder(Task(id="t", files=Files(poc=("p.bin",))), "p.bin")
    """
    parts = _parts(poc)
    if len(parts) < 2:
        return None
    top = parts[0]
    pocs = {_parts(p) for p in task.files.poc}
    for hidden in task.hidden_files():
        other = _parts(hidden)
        if other[:1] == (top,) and other not in pocs:
            return None
    return top


def support_folders(
    task: Task, folder: str, scripts: Mapping[str, str], entries: Iterable[str]
) -> tuple[str, ...]:
    """Top-level task folders (`entries`: the names of the task folder's subfolders) that a
    script names by absolute path (`scripts`: config path → text) and that hold no hidden
    material: the runner reads them at that path during grading (SPEC §5).

    >>> t = Task(id="t", scripts=Scripts(run="scripts/run.sh"))
    >>> support_folders(t, "/ssebench", {"scripts/run.sh": "cc /ssebench/harness/h.c"},
    ...                 ["harness", "scripts", "other"])
    ('harness',)
    """
    hidden_tops = {_parts(path)[0] for path in task.hidden_files() if len(_parts(path)) > 1}
    root = folder.rstrip("/")
    found: list[str] = []
    for name in sorted(entries):
        if name in hidden_tops or name in found:
            continue
        pattern = re.compile(re.escape(f"{root}/{name}") + r"(?![A-Za-z0-9._-])")
        if any(pattern.search(text) for text in scripts.values()):
            found.append(name)
    return tuple(found)


def checks_of(
    *,
    build: str | None,
    run: str | None,
    test: str | None,
    pocs: tuple[str, ...],
    future_test: str | None,
) -> frozenset[Check]:
    """Which checks a config has (SPEC §2): build ⇔ a build script; poc ⇔ a run script and
    PoCs; function_test ⇔ a test script; intent_test ⇔ a test script and hidden tests.

    >>> sorted(checks_of(build=None, run="r", test="t", pocs=("p",), future_test=None))
    ['function_test', 'poc']
    """
    has: set[Check] = set()
    if build:
        has.add("build")
    if run and pocs:
        has.add("poc")
    if test:
        has.add("function_test")
        if future_test:
            has.add("intent_test")
    return frozenset(has)


def parse_task(data: bytes) -> Result[Task, TaskError]:
    """Parse `config.yaml` bytes; an error names the offending key.

    >>> parse_task(b"id: demo\\nscripts: {build: build.sh}").unwrap().checks
    frozenset({'build'})
    >>> parse_task(b"id: [").failure().message.startswith("config.yaml: not valid YAML")
    True
    >>> parse_task(b"scripts: {}").failure()
    TaskError(message='config.yaml: id: required key is missing')
    """
    try:
        raw = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" (line {where.line + 1})" if where is not None else ""
        return Failure(TaskError(f"config.yaml: not valid YAML{line}"))
    if not isinstance(raw, dict):
        return Failure(TaskError("config.yaml: expected a mapping of keys"))
    try:
        return Success(Task.model_validate(raw))
    except ValidationError as exc:
        return Failure(TaskError(_describe(exc)))


_KNOWN: dict[str, tuple[str, ...]] = {
    "scripts": tuple(Scripts.model_fields),
    "files": tuple(Files.model_fields),
    "task_description": tuple(TaskDescription.model_fields),
}


def _describe(exc: ValidationError) -> str:
    err = exc.errors()[0]
    key = "".join(
        f"[{part}]" if isinstance(part, int) else f".{part}" for part in err["loc"]
    ).lstrip(".")
    if err["type"] == "missing":
        return f"config.yaml: {key}: required key is missing"
    if err["type"] == "extra_forbidden" and len(err["loc"]) == 2:
        section, name = str(err["loc"][0]), str(err["loc"][1])
        near = difflib.get_close_matches(name, _KNOWN.get(section, ()), n=1, cutoff=0.5)
        hint = f" (did you mean {section}.{near[0]}?)" if near else ""
        return f"config.yaml: {key}: unknown key{hint}"
    message = err["msg"].removeprefix("Value error, ")
    return f"config.yaml: {key}: {message}"
