"""The daemon's sockets, bound with their modes before anyone can connect; the admin socket
bound first thing (`bind_early`); each answering early (`answer_early`) until the server serves.

Interpreter layer, standard library only: `ssegrade daemon` binds its admin socket here before
it loads anything else (`interpreters.cli.entry` calls `bind_early` for it), so that the socket
takes connections within a few milliseconds of the start, and answers them at once
(`interpreters.daemon.starting`: `GET /version`; what needs the grading set up is held and
relayed to the server)
until the daemon serves (`stop_early_answers`); a connection then waits in the kernel's
backlog for the server. The admin socket is root's (mode 0600 in a folder of mode 0700 only its
user can enter), so binding it before the baseline is recorded gives the agent nothing; the
agent-facing socket is bound only once the baseline is recorded (SPEC §9: an entrypoint starts
the agent once that socket exists, so it cannot exist sooner, however it answers), and answers
the same way at once (`answer_early`) while the daemon loads its server. An early binding that
the daemon does not take (bad input, a usage error) is closed and its socket removed at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import os
import socket
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from interpreters.daemon.starting import EarlyAnswers
from ssegrade.internal.errors import SsegradeError

__all__ = [
    "DEFAULT_ADMIN_SOCKET",
    "SAFE_ADMIN_FOLDER",
    "Listening",
    "SocketError",
    "adopt_early",
    "answer_early",
    "bind_early",
    "bind_tcp",
    "bind_unix",
    "check_admin_folder",
    "remove_socket",
    "stop_early_answers",
]

_BACKLOG = 64
DEFAULT_ADMIN_SOCKET = "/run/ssebench-admin/admin.sock"
"""The admin socket unless `--admin-socket` or `SSE_ADMIN_SOCKET` names another."""


class SocketError(SsegradeError):
    """A listener that cannot be set up; the message is one line for stderr."""


class Listening(NamedTuple):
    """One bound listener: its socket, who it serves, and its Unix path (None for TCP). (A
    named tuple, not a dataclass: `dataclasses` loads `inspect` and `ast`, tens of
    milliseconds before the admin socket is bound.)"""

    sock: socket.socket
    listener: str
    path: Path | None
    where: str


def check_admin_folder(path: Path) -> None:
    """Make sure the admin socket's folder exists with mode 0700, owned by this user.

    A missing folder is created (mode 0700). An existing one that others can enter, or that
    someone else owns, is refused rather than changed.
    """
    folder = path.parent
    try:
        folder.mkdir(mode=0o700, parents=True)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SocketError(
            f"cannot create the admin socket folder {folder}: {exc.strerror}"
        ) from exc
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode):
        raise SocketError(f"admin socket folder {folder} is not a folder")
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != os.geteuid() or mode & 0o077:
        raise SocketError(
            f"admin socket folder {folder} must be mode 0700 and owned by uid {os.geteuid()}"
            f" (it has mode {mode:04o}, uid {info.st_uid}): {_safe_place(path)}"
        )


SAFE_ADMIN_FOLDER = Path(DEFAULT_ADMIN_SOCKET).parent
"""Where the admin socket goes by default: a folder of its own, made with mode 0700."""


def _safe_place(path: Path) -> str:
    """What to do instead of an admin socket in a folder others can enter."""
    if path.parent == SAFE_ADMIN_FOLDER:
        return f"make it so (chmod 0700 {SAFE_ADMIN_FOLDER}), or name a folder of its own"
    return (
        f"give the socket a folder of its own, e.g. --admin-socket {SAFE_ADMIN_FOLDER / path.name}"
        " (made with mode 0700 when missing)"
    )


def _clear_stale(path: Path) -> None:
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(info.st_mode):
        raise SocketError(f"{path} exists and is not a socket")
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.connect(str(path))
    except OSError as exc:
        if exc.errno not in (errno.ECONNREFUSED, errno.ENOENT):
            raise SocketError(f"cannot check the socket {path}: {exc.strerror}") from exc
    else:
        raise SocketError(f"a daemon already listens on {path}")
    finally:
        probe.close()
    path.unlink(missing_ok=True)


def bind_unix(path: Path, mode: int, listener: str) -> Listening:
    """A listening Unix socket at `path` with `mode`; a stale socket file is replaced."""
    if len(os.fsencode(path)) >= 104:
        raise SocketError(f"socket path too long ({len(os.fsencode(path))} bytes): {path}")
    if listener == "agent":
        try:
            path.parent.mkdir(mode=0o755, parents=True, exist_ok=True)
        except OSError as exc:
            raise SocketError(f"cannot create {path.parent}: {exc.strerror}") from exc
    _clear_stale(path)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    previous = os.umask(0o177)
    try:
        sock.bind(str(path))
        os.chmod(path, mode)
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot listen on {path}: {exc.strerror}") from exc
    finally:
        os.umask(previous)
    sock.setblocking(False)
    return Listening(sock, listener, path, f"unix:{path}")


def bind_tcp(port: int) -> Listening:
    """A listening agent-facing TCP socket on 127.0.0.1:`port`."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", port))
        sock.listen(_BACKLOG)
    except OSError as exc:
        sock.close()
        raise SocketError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror}") from exc
    sock.setblocking(False)
    return Listening(sock, "agent", None, f"http://127.0.0.1:{port}")


def remove_socket(path: Path | None) -> None:
    """Remove a socket file we created (nothing else)."""
    if path is None:
        return
    with contextlib.suppress(OSError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()


_early: dict[Path, Listening] = {}
_answering: list[EarlyAnswers] = []
"""What answers on the sockets bound so far (`answer_early`), until the daemon serves."""
_made: list[Path] = []
"""The folders `bind_early` made for the admin socket, innermost first."""


def _discard_early() -> None:
    """At exit, what `bind_early` made and the daemon never took: the socket, and the folders
    made for it (a refused command leaves nothing behind)."""
    stop_early_answers()
    if not _early:
        return
    for item in _early.values():
        with contextlib.suppress(OSError):
            item.sock.close()
        remove_socket(item.path)
    _early.clear()
    _remove_made(_made)


def _remove_made(folders: Sequence[Path]) -> None:
    """Remove `folders` (innermost first) while they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def _admin_path(argv: Sequence[str], environ: Mapping[str, str]) -> Path | None:
    """The admin socket `ssegrade daemon ARGS` will bind, as click will read it (the last
    `--admin-socket`, else `SSE_ADMIN_SOCKET`, else the default); None when the command will
    not serve (help, the OpenAPI document)."""
    named: str | None = None
    for index, argument in enumerate(argv):
        if argument in ("--help", "-h", "--openapi"):
            return None
        option, equals, value = argument.partition("=")
        if option == "--admin-socket":
            named = value if equals else (argv[index + 1] if index + 1 < len(argv) else None)
    chosen = named or environ.get("SSE_ADMIN_SOCKET") or DEFAULT_ADMIN_SOCKET
    return Path(chosen).absolute()


def bind_early(argv: Sequence[str], environ: Mapping[str, str]) -> None:
    """Bind the admin socket of `ssegrade daemon ARGV` now, for `adopt_early` to take later.
    Anything in the way (an unsafe folder, a socket already served) binds nothing here: the
    daemon then meets it again in its own order and says so."""
    path = _admin_path(argv, environ)
    if path is None:
        return
    missing = [folder for folder in (path.parent, *path.parent.parents) if not folder.exists()]
    try:
        check_admin_folder(path)
        _early[path] = bind_unix(path, 0o600, "admin")
    except (SocketError, OSError):
        _remove_made(missing)
        return
    _made.extend(missing)
    atexit.register(_discard_early)
    answer_early(_early[path])


def answer_early(listening: Listening) -> None:
    """Answer on `listening` from now on until `stop_early_answers`: `GET /version` at once,
    the rest held for the server (`interpreters.daemon.starting`)."""
    answers = EarlyAnswers(listening.sock)
    answers.start()
    _answering.append(answers)


def stop_early_answers() -> None:
    """Stop answering on every socket `answer_early` answers (the server takes them now);
    each held request then goes to the server."""
    while _answering:
        _answering.pop().stop()


def adopt_early(path: Path) -> Listening | None:
    """The listener `bind_early` bound at `path`, now the caller's; None if none."""
    return _early.pop(path.absolute(), None)
