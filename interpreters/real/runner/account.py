"""The runner account: who task scripts run as.

Interpreter layer (reads the account database, may run `useradd`). As root, scripts run as a
dedicated account that is never root and has no supplementary groups; as an ordinary user they
run as that user, without isolation.
"""

from __future__ import annotations

import os
import pwd
import re
import subprocess
from dataclasses import dataclass

from returns.result import Failure, Result, Success

from interpreters.real.programs import SEARCH_PATH, ProgramError, program

__all__ = [
    "DEFAULT_PATH",
    "TOOL_ENV",
    "Runner",
    "RunnerError",
    "isolated",
    "resolve_runner",
    "who",
]

DEFAULT_PATH = ":".join(SEARCH_PATH)
TOOL_ENV = {"PATH": DEFAULT_PATH, "LC_ALL": "C"}
"""The environment of the system tools we run ourselves (`useradd`, `unshare`)."""

_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}\Z")
_NOLOGIN = ("/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/nologin", "/bin/false")


@dataclass(frozen=True, slots=True)
class Runner:
    """Who runs task scripts.

    `isolated` is true when scripts run as a dedicated account other than ours (we are root);
    `created` when `resolve_runner` had to create that account; `note` is the line to log once
    (no isolation, or the account was created), else `None`.
    """

    name: str | None
    uid: int
    gid: int
    isolated: bool
    created: bool = False
    note: str | None = None


@dataclass(frozen=True, slots=True)
class RunnerError:
    """The runner account cannot be used (missing, root, or could not be created)."""

    message: str


def isolated(runner: Runner) -> bool:
    """Whether scripts really change account: `runner` is isolated and we are root."""
    return runner.isolated and os.geteuid() == 0 and runner.uid != 0


def who(runner: Runner) -> str:
    """The `user:` line of a script's log."""
    if isolated(runner):
        return f"{runner.name or runner.uid} (uid {runner.uid}, gid {runner.gid})"
    return f"{runner.name or runner.uid} (the current user; no isolation)"


def resolve_runner(
    requested: str | None, *, default: str = "sse-runner"
) -> Result[Runner, RunnerError]:
    """Choose the account task scripts run as.

    Not root: the current user, without isolation (`note` says so). Root: the `requested`
    account, which must exist and be neither root nor in root's group; with no `requested`,
    the `default` account, created as a dedicated system account (no home, no login shell, its
    own group and no other) when it is missing (`created`, and `note` says so).
    """
    if os.geteuid() != 0:
        uid, gid = os.getuid(), os.getgid()
        name = _user_name(uid)
        note = f"not root: task scripts run as the current user {name or uid} (no isolation)"
        if requested is not None:
            note += f"; the runner user {requested!r} is ignored"
        return Success(Runner(name, uid, gid, isolated=False, note=note))
    if requested is not None:
        entry = _lookup(requested)
        if entry is None:
            return Failure(RunnerError(f"the runner user {requested!r} does not exist"))
        return _checked(entry, created=False)
    entry = _lookup(default)
    if entry is not None:
        return _checked(entry, created=False)
    made = _create_account(default)
    if isinstance(made, RunnerError):
        return Failure(made)
    entry = _lookup(default)
    if entry is None:
        return Failure(RunnerError(f"created the runner user {default!r} but cannot find it"))
    return _checked(entry, created=made)


def _user_name(uid: int) -> str | None:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return None


def _lookup(name: str) -> pwd.struct_passwd | None:
    try:
        return pwd.getpwnam(name)
    except KeyError:
        return None


def _checked(entry: pwd.struct_passwd, *, created: bool) -> Result[Runner, RunnerError]:
    name = entry.pw_name
    if entry.pw_uid == 0:
        return Failure(RunnerError(f"the runner user {name!r} is root: scripts never run as root"))
    if entry.pw_gid == 0:
        return Failure(
            RunnerError(f"the runner user {name!r} has root's group (gid 0) as its group")
        )
    note = (
        f"created the system account {name!r} (uid {entry.pw_uid}) to run task scripts"
        if created
        else None
    )
    return Success(Runner(name, entry.pw_uid, entry.pw_gid, True, created=created, note=note))


def _create_account(name: str) -> bool | RunnerError:
    """Create `name` as a system account; `True` if made, `False` if someone else just did."""
    if not _NAME.match(name):
        return RunnerError(f"cannot create the runner user {name!r}: not a valid account name")
    try:
        useradd = program("useradd")
    except ProgramError as exc:
        return RunnerError(
            f"the runner user {name!r} does not exist and useradd cannot be run ({exc}): "
            "create the account or choose another runner user"
        )
    shell = next((path for path in _NOLOGIN if os.path.exists(path)), "/bin/false")
    command = [
        useradd,
        "--system",
        "--no-create-home",
        "--home-dir",
        "/nonexistent",
        "--shell",
        shell,
        "--user-group",
        "--comment",
        "ssegrade task runner",
        name,
    ]
    try:
        done = subprocess.run(
            command, env=TOOL_ENV, capture_output=True, text=True, timeout=60, check=False
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return RunnerError(f"cannot create the runner user {name!r}: {exc}")
    if done.returncode == 0:
        return True
    if done.returncode == 9 and _lookup(name) is not None:  # 9: made meanwhile by someone else
        return False
    message = (done.stderr or done.stdout).strip().splitlines()
    reason = message[-1] if message else f"useradd exited {done.returncode}"
    return RunnerError(f"cannot create the runner user {name!r}: {reason}")
