"""Which flags count against a run, and which are only listed (SPEC §15).

Pure core. A flag counts when it can change what a check sees: every flag of `evidence`, and
every `sanitizer`, `crash-handler` and `poc-literal` flag. A touch of `build-config`,
`vendored` or `tests` files counts only when a check runs the file touched; otherwise it is
listed, not counted (`Flag.counts` false). What the guard can see decides:

- `tests`: the hidden tests' files (the intent test runs them) and test machinery read in the
  code (a `TestMain`, an `init` that exits, a runner's settings) count; the project's tests
  by convention count when the task has tests to run and the patch changes or deletes one
  that was there; a test file the patch only adds is listed (it can only add failures);
- `build-config`: counts when the task has a script that builds (build or tests), unless every
  build file touched lies in a folder no build reads (`docs`, `examples`, CI settings);
- `vendored`: counts when the task has a script that builds and a vendored file touched is
  code or a build file; vendored notes, licenses and listings are listed.

`counts` reads a flag of `guard.json` (an older one, without the field, counts: as it did).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ssegrade.guard._diff import FileChange
from ssegrade.guard._syntax import language_of
from ssegrade.internal.guard_document import ALWAYS, counts
from ssegrade.internal.task import Task

__all__ = ["ALWAYS", "NOT_BUILT", "counts", "touch_counts"]


NOT_BUILT = frozenset(
    ("docs", "doc", "examples", "example", "contrib", ".github", ".gitlab", ".circleci", "ci")
)
"""Folders whose build files no check's build reads."""


def _builds(task: Task) -> bool:
    return bool(task.checks & {"build", "function_test", "intent_test"})


def _tests_run(task: Task) -> bool:
    return bool(task.checks & {"function_test", "intent_test"})


def _in_unbuilt(path: str) -> bool:
    return any(part in NOT_BUILT for part in path.split("/")[:-1])


def touch_counts(
    kind: str,
    hits: Sequence[str],
    task: Task,
    changes: Sequence[FileChange],
    build_file: Callable[[str], bool],
) -> bool:
    """Whether a `Paths` rule's touch of `hits` (paths the patch touches) changes what a check
    runs, for `kind` `tests` (the project's tests by convention), `build-config` or
    `vendored`; `build_file(path)` says whether a path is a build file.

    >>> from ssegrade.internal.task import Scripts
    >>> task = Task(id="t", scripts=Scripts(build="b.sh", test="t.sh"))
    >>> added = [FileChange(None, "tests/test_new.c")]
    >>> touch_counts("tests", ["tests/test_new.c"], task, added, bool)
    False
    >>> touch_counts("build-config", ["docs/Makefile"], task, [], bool), touch_counts(
    ...     "build-config", ["Makefile"], task, [], bool)
    (False, True)
    """
    if kind == "tests":
        before = {c.old_path for c in changes if c.old_path is not None}
        return _tests_run(task) and any(path in before for path in hits)
    if kind == "build-config":
        return _builds(task) and not all(_in_unbuilt(path) for path in hits)
    if kind == "vendored":
        code = any(language_of(path) is not None or build_file(path) for path in hits)
        return _builds(task) and code
    return True
