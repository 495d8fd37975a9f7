"""The environment of a task script (SPEC §5 "Environment of a script").

Interpreter layer (reads our own environment). A script gets the evaluator's environment (in a
task image it holds the toolchain's settings) minus every variable that could lead to grading
material or the admin side, then `HOME`, `TMPDIR` and the usual cache folders pointing into the
session's scratch home, then the extra pairs given, then the run's markers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.runner.account import DEFAULT_PATH
from interpreters.real.runner.processes import RUN_VAR, SESSION_VAR

__all__ = ["SECRET_NAMES", "EnvPolicy", "script_environment"]

SECRET_NAMES = frozenset({"SSE_ADMIN_SOCKET", "SSE_RESULTS", "SSE_BASELINE", "SSE_REPO_PATH"})
"""Variables never given to a script, whatever their value."""

_LOCALE = ("LANG", "LANGUAGE", "LC_ALL")
_CACHES = {
    "XDG_CACHE_HOME": ".cache",
    "GOCACHE": ".cache/go-build",
    "CCACHE_DIR": ".cache/ccache",
}


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """How a script's environment is made.

    `extra`: `NAME=VALUE` pairs that add or override (after everything but the markers);
    `clean`: start from `PATH` and the locale only, instead of our whole environment;
    `hidden`: folders (results, baseline, admin) no variable may point into.
    """

    extra: tuple[tuple[str, str], ...] = ()
    clean: bool = False
    hidden: tuple[str, ...] = ()


def script_environment(
    policy: EnvPolicy,
    *,
    home: Path,
    session: str,
    run: str,
    path: str | None = None,
    ours: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The environment of one script run under `policy`.

    `ours` is the evaluator's environment (default `os.environ`). `PATH` is `path` when given,
    else ours without relative entries (`DEFAULT_PATH` when nothing is left). Without a locale
    the script gets `LANG=C.UTF-8`.
    """
    base = dict(os.environ if ours is None else ours)
    if policy.clean:
        base = {
            name: value
            for name, value in base.items()
            if name == "PATH" or name in _LOCALE or name.startswith("LC_")
        }
    hidden = _folders(policy.hidden)
    env = {
        name: value
        for name, value in base.items()
        if name not in SECRET_NAMES
        and name not in (SESSION_VAR, RUN_VAR)
        and not _points_into(value, hidden)
    }
    if path is None:
        kept = [part for part in env.get("PATH", "").split(os.pathsep) if part[:1] == "/"]
        path = os.pathsep.join(kept) if kept else DEFAULT_PATH
    env["PATH"] = path
    if not any(name in env for name in ("LANG", "LC_ALL")):
        env["LANG"] = "C.UTF-8"
    env["HOME"] = env["TMPDIR"] = os.fspath(home)
    for name, below in _CACHES.items():
        env[name] = os.fspath(home / below)
    env.update(policy.extra)
    env[SESSION_VAR] = session
    env[RUN_VAR] = run
    return env


def _folders(paths: Iterable[str]) -> tuple[str, ...]:
    """Each hidden folder as written and as resolved, without a trailing slash."""
    found: set[str] = set()
    for given in paths:
        if not given:
            continue
        for form in (os.path.normpath(os.path.abspath(given)), os.path.realpath(given)):
            found.add(form.rstrip("/") or "/")
    return tuple(sorted(found))


@functools.lru_cache(maxsize=4096)
def _resolved(path: str) -> str:
    """`path` with its symlinks resolved (our own environment's values: a cache is enough)."""
    return os.path.realpath(path)


def _points_into(value: str, folders: tuple[str, ...]) -> bool:
    """Whether `value`, or one entry of it as a colon-separated list, is a path inside (or
    equal to) one of `folders`."""
    if not folders:
        return False
    for part in value.split(os.pathsep):
        if not part.startswith("/"):
            continue
        for form in (os.path.normpath(part), _resolved(part)):
            if any(form == folder or form.startswith(folder + "/") for folder in folders):
                return True
    return False
