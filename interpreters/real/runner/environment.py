"""The environment of a task script (SPEC §5 "Environment of a script").

Interpreter layer (reads our own environment). A script gets the evaluator's environment (in a
task image it holds the toolchain's settings) minus every variable that could lead to grading
material or the admin side and every variable whose name looks like a credential (unless the
operator passes it by name), then `HOME`, `TMPDIR` and the usual cache folders pointing into
the session's scratch home, then the extra pairs given, then the run's markers.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.runner.account import DEFAULT_PATH
from interpreters.real.runner.guardian import OWNER_VAR, owner_tag
from interpreters.real.runner.processes import RUN_VAR, SESSION_VAR

__all__ = ["SECRET_NAMES", "EnvPolicy", "credential_like", "left_out", "script_environment"]

SECRET_NAMES = frozenset({"SSE_ADMIN_SOCKET", "SSE_RESULTS", "SSE_BASELINE", "SSE_REPO_PATH"})
"""Variables never given to a script, whatever their value."""

_CREDENTIAL_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "COOKIE",
    "SSH_AUTH_SOCK",
)
_CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "GPG_AGENT")
_MARKERS = (SESSION_VAR, RUN_VAR, OWNER_VAR)

_LOCALE = ("LANG", "LANGUAGE", "LC_ALL")
_CACHES = {
    "XDG_CACHE_HOME": ".cache",
    "GOCACHE": ".cache/go-build",
    "CCACHE_DIR": ".cache/ccache",
}


@dataclass(frozen=True, slots=True)
class EnvPolicy:
    """How a script's environment is made.

    `extra`: `NAME=VALUE` pairs that add or override (after everything but the markers; a
    credential the operator passes by name comes as such a pair, with our value);
    `clean`: start from `PATH` and the locale only, instead of our whole environment;
    `hidden`: folders (results, baseline, admin) no variable may point into.
    """

    extra: tuple[tuple[str, str], ...] = ()
    clean: bool = False
    hidden: tuple[str, ...] = ()


def credential_like(name: str) -> bool:
    """Whether a variable's name looks like it holds a credential (`*KEY*`, `*TOKEN*`,
    `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `AWS_*`, ...; any case)."""
    upper = name.upper()
    return upper.startswith(_CREDENTIAL_PREFIXES) or any(w in upper for w in _CREDENTIAL_WORDS)


def script_environment(
    policy: EnvPolicy,
    *,
    home: Path,
    session: str,
    run: str,
    path: str | None = None,
    ours: Mapping[str, str] | None = None,
    owner: str | None = None,
) -> dict[str, str]:
    """The environment of one script run under `policy`.

    `ours` is the evaluator's environment (default `os.environ`). `PATH` is `path` when given,
    else ours without relative entries (`DEFAULT_PATH` when nothing is left). Without a locale
    the script gets `LANG=C.UTF-8`. The markers are the session, the run and the owner tag of
    this process (`guardian.owner_tag`), `owner` when given.
    """
    env, _ = _kept(policy, ours)
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
    env[OWNER_VAR] = owner if owner is not None else owner_tag()
    return env


def left_out(policy: EnvPolicy, ours: Mapping[str, str] | None = None) -> list[str]:
    """The names of our variables a script does not get, each with why: `NAME (credential)`,
    `NAME (grading material)`; sorted. Those of `extra` are given, and not listed."""
    _, left = _kept(policy, ours)
    given = {name for name, _ in policy.extra}
    return sorted(entry for entry in left if entry.split(" ", 1)[0] not in given)


def _kept(policy: EnvPolicy, ours: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """Our variables a script may get, and the others with why they are left out."""
    base = dict(os.environ if ours is None else ours)
    if policy.clean:
        base = {
            name: value
            for name, value in base.items()
            if name == "PATH" or name in _LOCALE or name.startswith("LC_")
        }
    hidden = _folders(policy.hidden)
    kept: dict[str, str] = {}
    left: list[str] = []
    for name, value in base.items():
        if name in _MARKERS:
            continue
        if name in SECRET_NAMES or _points_into(value, hidden):
            left.append(f"{name} (grading material)")
        elif credential_like(name):
            left.append(f"{name} (credential)")
        else:
            kept[name] = value
    return kept, left


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
