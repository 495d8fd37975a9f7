"""The environment of a task script and of the agent's bash tool (SPEC §5 "Environment of
a script").

Interpreter layer (reads our own environment). A script gets, from the evaluator's environment,
only the variables an allow-list names (`allowed`: `PATH`, the locale, `TERM`, `TZ` and the
toolchain's settings a task image sets: Go, Rust, C, Java, Python, the sanitizers, any
`*_HOME`; and `names_paths`: any variable whose value names existing folders by absolute path,
as a task image's own toolchain settings do), minus every one that could lead to grading
material or the admin side and every one that carries a credential (`credential`: by its name
or its value, unless the operator passes it by name), then `HOME`, `TMPDIR`, `TMP`, `TEMP` and
the usual cache folders pointing into the session's scratch home, then the extra pairs given,
then the run's markers.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.runner.account import DEFAULT_PATH
from interpreters.real.runner.guardian import OWNER_VAR, owner_tag
from interpreters.real.runner.processes import RUN_VAR, SESSION_VAR

__all__ = [
    "ALLOWED_NAMES",
    "ALLOWED_PREFIXES",
    "ALLOWED_SUFFIX",
    "SECRET_NAMES",
    "EnvPolicy",
    "allowed",
    "credential",
    "credential_like",
    "kept_environment",
    "left_out",
    "names_paths",
    "script_environment",
]

SECRET_NAMES = frozenset({"SSE_ADMIN_SOCKET", "SSE_RESULTS", "SSE_BASELINE", "SSE_REPO_PATH"})
"""Variables never given to a script, whatever their value."""

ALLOWED_NAMES = frozenset(
    {
        "PATH",
        "TERM",
        "TZ",
        "LANG",
        "LANGUAGE",
        # Go
        "GOPATH",
        "GOROOT",
        "GOBIN",
        "GOFLAGS",
        "GOPROXY",
        "GONOPROXY",
        "GOSUMDB",
        "GONOSUMDB",
        "GOPRIVATE",
        "GOINSECURE",
        "GOTOOLCHAIN",
        "GOMODCACHE",
        "GO111MODULE",
        "GOOS",
        "GOARCH",
        "GOAMD64",
        "GOARM",
        "GOEXPERIMENT",
        "GODEBUG",
        "GOMAXPROCS",
        # Rust (besides CARGO_*, RUSTUP_*)
        "RUSTFLAGS",
        "RUSTDOCFLAGS",
        "RUST_BACKTRACE",
        "RUST_MIN_STACK",
        # C and C++
        "CC",
        "CXX",
        "CPP",
        "LD",
        "AR",
        "CFLAGS",
        "CXXFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "LDLIBS",
        "CPATH",
        "C_INCLUDE_PATH",
        "CPLUS_INCLUDE_PATH",
        "LIBRARY_PATH",
        "LD_LIBRARY_PATH",
        "PKG_CONFIG_PATH",
        "ASAN_OPTIONS",
        "UBSAN_OPTIONS",
        "MSAN_OPTIONS",
        "LSAN_OPTIONS",
        "TSAN_OPTIONS",
        "ASAN_SYMBOLIZER_PATH",
        "LLVM_SYMBOLIZER_PATH",
        # Java
        "JAVA_TOOL_OPTIONS",
        "MAVEN_OPTS",
        "GRADLE_OPTS",
        # Python and Node
        "VIRTUAL_ENV",
        "NODE_PATH",
        "NODE_OPTIONS",
        # builds, certificates and proxies (a proxy with a user part is a credential)
        "MAKEFLAGS",
        "SSL_CERT_FILE",
        "SSL_CERT_DIR",
        "REQUESTS_CA_BUNDLE",
        "CURL_CA_BUNDLE",
        "NODE_EXTRA_CA_CERTS",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "NO_PROXY",
        "http_proxy",
        "https_proxy",
        "no_proxy",
    }
)
"""Variables of ours a script may get (then only without a credential in them)."""

ALLOWED_PREFIXES = ("LC_", "CGO_", "CARGO_", "RUSTUP_", "PYTHON", "CMAKE_")
"""Prefixes of the other allowed names: the locale's and whole toolchains' settings."""
ALLOWED_SUFFIX = "_HOME"
"""The ending of the names of toolchains' homes (`JAVA_HOME`, `ANDROID_HOME`, a task image's own
`KVC_HOME`), allowed too."""

_CREDENTIAL_WORDS = (
    "KEY",
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "COOKIE",
    "AUTH",
)
_CREDENTIAL_PREFIXES = ("AWS_", "AZURE_", "GOOGLE_", "GCLOUD_", "GPG_AGENT")
_CREDENTIAL_SUFFIXES = ("_PAT", "_PWD", "_PASS")
_USERINFO = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^/?#@\s]*@")
"""A URL with a user part (`scheme://user:pass@`, `scheme://token@`)."""
_MARKERS = (SESSION_VAR, RUN_VAR, OWNER_VAR)

_LOCALE = ("LANG", "LANGUAGE", "LC_ALL")
_SCRATCH = ("HOME", "TMPDIR", "TMP", "TEMP")
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
    `clean`: keep `PATH` and the locale only of ours, instead of what the allow-list names;
    `hidden`: folders (results, baseline, admin) no variable may point into.
    """

    extra: tuple[tuple[str, str], ...] = ()
    clean: bool = False
    hidden: tuple[str, ...] = ()


def allowed(name: str) -> bool:
    """Whether the allow-list names `name`: one of `ALLOWED_NAMES`, a name beginning with one
    of `ALLOWED_PREFIXES`, or a toolchain's home (`*_HOME`)."""
    return (
        name in ALLOWED_NAMES or name.startswith(ALLOWED_PREFIXES) or name.endswith(ALLOWED_SUFFIX)
    )


def names_paths(value: str) -> bool:
    """Whether `value` names existing paths, as a toolchain's setting does (`/opt/kv`,
    `/opt/a/bin:/opt/b/bin`): every colon-separated part absolute, and at least one existing.

    Such a variable is let through whatever its name (a task image's `KVC_TOOLCHAIN`), unless
    it carries a credential or leads to grading material.
    """
    parts = [part for part in value.split(os.pathsep) if part]
    return (
        bool(parts)
        and all(part.startswith("/") for part in parts)
        and any(os.path.exists(part) for part in parts)
    )


def credential_like(name: str) -> bool:
    """Whether a variable's name looks like it holds a credential (`*KEY*`, `*TOKEN*`,
    `*SECRET*`, `*PASSWORD*`, `*CREDENTIAL*`, `*AUTH*`, `*_PAT`, `*_PWD`, `AWS_*`, ...; any
    case)."""
    upper = name.upper()
    return (
        upper.startswith(_CREDENTIAL_PREFIXES)
        or upper.endswith(_CREDENTIAL_SUFFIXES)
        or any(w in upper for w in _CREDENTIAL_WORDS)
    )


def credential(name: str, value: str) -> bool:
    """Whether a variable carries a credential: its name looks like one (`credential_like`),
    or its value holds a URL with a user part (`scheme://user:pass@`, `scheme://token@`)."""
    return credential_like(name) or _USERINFO.search(value) is not None


def kept_environment(
    policy: EnvPolicy, *, path: str | None = None, ours: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of ours that `policy` lets through (allowed, credential-free, leading to
    no hidden folder), with `PATH` and a locale: the part of the environment a script and the
    agent's bash tool share.

    `ours` is the evaluator's environment (default `os.environ`). `PATH` is `path` when given,
    else ours without relative entries (`DEFAULT_PATH` when nothing is left). Without a locale
    it gets `LANG=C.UTF-8`.
    """
    env, _ = _kept(policy, ours)
    if path is None:
        kept = [part for part in env.get("PATH", "").split(os.pathsep) if part[:1] == "/"]
        path = os.pathsep.join(kept) if kept else DEFAULT_PATH
    env["PATH"] = path
    if not any(name in env for name in ("LANG", "LC_ALL")):
        env["LANG"] = "C.UTF-8"
    return env


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
    """The environment of one script run under `policy`: `kept_environment`, then `HOME`,
    `TMPDIR`, `TMP`, `TEMP` (all `home`) and the caches inside `home`, then `policy.extra`,
    then the markers: the session, the run and the owner tag of this process
    (`guardian.owner_tag`), `owner` when given."""
    env = kept_environment(policy, path=path, ours=ours)
    for name in _SCRATCH:
        env[name] = os.fspath(home)
    for name, below in _CACHES.items():
        env[name] = os.fspath(home / below)
    env.update(policy.extra)
    env[SESSION_VAR] = session
    env[RUN_VAR] = run
    env[OWNER_VAR] = owner if owner is not None else owner_tag()
    return env


def left_out(policy: EnvPolicy, ours: Mapping[str, str] | None = None) -> list[str]:
    """The names of our variables a script does not get, each with why: `NAME (credential)`,
    `NAME (grading material)`, `NAME (not allowed)`; sorted. Those of `extra` are given, and
    not listed."""
    _, left = _kept(policy, ours)
    given = {name for name, _ in policy.extra}
    return sorted(entry for entry in left if entry.split(" ", 1)[0] not in given)


def _kept(policy: EnvPolicy, ours: Mapping[str, str] | None) -> tuple[dict[str, str], list[str]]:
    """Our variables a script may get, and the others with why they are left out."""
    base = os.environ if ours is None else ours
    hidden = _folders(policy.hidden)
    kept: dict[str, str] = {}
    left: list[str] = []
    for name, value in base.items():
        if name in _MARKERS:
            continue
        if name in SECRET_NAMES or _points_into(value, hidden):
            left.append(f"{name} (grading material)")
        elif credential(name, value):
            left.append(f"{name} (credential)")
        elif not (_clean_allowed(name) if policy.clean else allowed(name) or names_paths(value)):
            left.append(f"{name} (not allowed)")
        else:
            kept[name] = value
    return kept, left


def _clean_allowed(name: str) -> bool:
    """What `--clean-env` keeps: `PATH` and the locale."""
    return name == "PATH" or name in _LOCALE or name.startswith("LC_")


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
