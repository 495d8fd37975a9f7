"""The agent's `bash` tool: one persistent interactive shell in the agent's source tree.

Interpreter layer. As SSEBench's daemon does, `POST /tool/bash` runs each command in one
`bash -i` that lives across calls (a `cd` or an `export` carries over, `exit` ends it for
good), started in the source tree as the agent's account (`SSE_AGENT_USER`, default `model`;
never root: a missing account, or root, refuses the tool), in a session and process group of
its own. Its environment is the scripts' (`interpreters.real.runner.environment`): of the
daemon's, only what the allow-list names and carries no credential nor a path into the grading
folders or the admin socket's, then `HOME`, `USER`, `LOGNAME` of the account, then the
operator's `--script-env` pairs. Run as an ordinary user, the daemon runs the shell as itself.

What differs from the original, on purpose: each command reads its standard input from
`/dev/null` (a command that reads stdin cannot swallow the next one), a command's output is
read to a marker no command can print by chance (a random token), it has a time limit (the
daemon's `--script-timeout`: past it the shell is killed and closed), and at most
`MAX_OUTPUT` bytes of each stream are kept (the end of it). When the agent phase ends and when
the daemon stops, the shell is killed and, as root, so is every process of the agent's account
(a dedicated account: whatever it started, `setsid` or double forks included).
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
import re
import secrets
import selectors
import signal
import subprocess
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from interpreters.daemon.ports import ShellError
from interpreters.real.runner.environment import EnvPolicy, kept_environment
from interpreters.real.runner.processes import kill_account
from ssegrade.internal.answers import ScriptResult

__all__ = ["DEFAULT_AGENT_USER", "MAX_OUTPUT", "AgentShell", "ShellError"]

DEFAULT_AGENT_USER = "model"
MAX_OUTPUT = 4 << 20
"""Bytes of each stream a command's answer keeps (its last ones)."""

DIED = "bash process has died"
"""SSEBench's message for a call after the shell ended."""

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Account:
    name: str
    uid: int
    gid: int
    home: str


def _account(name: str) -> _Account | None:
    """The account the shell runs as; None when the daemon is not root (it runs as itself)."""
    if os.geteuid() != 0:
        return None
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        raise ShellError(
            f"no account {name!r} for the bash tool (SSE_AGENT_USER): it never runs as root"
        ) from None
    if entry.pw_uid == 0:
        raise ShellError(f"the bash tool's account {name!r} is root: it never runs as root")
    return _Account(name, entry.pw_uid, entry.pw_gid, entry.pw_dir)


class _Stream:
    """One output stream of the shell, kept up to `MAX_OUTPUT` bytes (its end)."""

    def __init__(self) -> None:
        self.data = bytearray()
        self.cut = 0

    def add(self, chunk: bytes) -> None:
        self.data += chunk
        if len(self.data) > 2 * MAX_OUTPUT:
            drop = len(self.data) - MAX_OUTPUT
            del self.data[:drop]
            self.cut += drop

    def text(self, end: int) -> str:
        kept = bytes(self.data[:end]).decode("utf-8", "replace")
        return f"[{self.cut} bytes cut]\n{kept}" if self.cut else kept


class AgentShell:
    """The persistent shell of the `bash` tool; thread-safe (one command at a time)."""

    def __init__(self, cwd: Path, user: str = DEFAULT_AGENT_USER, env: EnvPolicy | None = None):
        self.cwd = cwd
        self.user = user
        self.env = env or EnvPolicy()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._closed = False
        token = secrets.token_hex(16)
        self._out = f"__ssegrade_{token}_status="
        self._err = f"__ssegrade_{token}_end__"
        self._done = re.compile(re.escape(self._out.encode()) + rb"(-?\d+)\n")

    # ------------------------------------------------------------------ life

    def _environment(self, account: _Account | None) -> dict[str, str]:
        env = kept_environment(self.env)
        if account is not None:
            env.update(HOME=account.home, USER=account.name, LOGNAME=account.name)
        else:  # the daemon's own user: its own names
            env.update({k: os.environ[k] for k in ("HOME", "USER", "LOGNAME") if k in os.environ})
        env.update(self.env.extra)
        return env

    def _start(self, limit: float) -> subprocess.Popen[bytes]:
        account = _account(self.user)
        try:
            proc = subprocess.Popen(
                ["bash", "--noediting", "-i"],
                cwd=self.cwd,
                env=self._environment(account),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
                close_fds=True,
                user=None if account is None else account.uid,
                group=None if account is None else account.gid,
                extra_groups=None if account is None else [],
            )
        except OSError as exc:
            raise ShellError(f"cannot start the bash tool: {exc.strerror or exc}") from None
        self._proc = proc
        # No prompts, so that a command's output is its own; what bash says as it starts
        # (no job control without a terminal) is read and dropped here.
        self._exchange(proc, "PS1=''; PS2=''; PS0=''; unset PROMPT_COMMAND", limit)
        return proc

    def close(self) -> None:
        """Kill the shell and everything in its process group and, as root, every process of
        the agent's account; later calls fail. A command running now ends within a second,
        with what it printed."""
        self._closed = True
        proc = self._proc
        if proc is not None:
            _signal(proc)
        self._end_account()
        if proc is not None and self._lock.acquire(blocking=False):
            try:
                _reap(proc)
            finally:
                self._lock.release()

    def _end_account(self) -> None:
        """Kill every process of the agent's account (root only: not root, the shell runs as
        the daemon itself, and its process group is all there is to kill)."""
        try:
            account = _account(self.user)
        except ShellError:
            return  # no such account: nothing of it runs
        if account is None:
            return
        left = kill_account(account.uid, account.gid)
        if left:
            _log.warning("processes of the agent's account still alive: %s", left)

    # ------------------------------------------------------------------ commands

    def run(self, command: str, limit: float) -> ScriptResult:
        """Run `command` in the shell and wait for it (at most `limit` seconds).

        Raises `ShellError` when the shell has ended (exit, killed, the agent phase over) or
        cannot start.
        """
        with self._lock:
            if self._closed:
                raise ShellError(DIED)
            proc = self._proc
            if proc is None:
                proc = self._start(limit)
            elif proc.poll() is not None:
                raise ShellError(DIED)
            return self._exchange(proc, command, limit)

    def _exchange(self, proc: subprocess.Popen[bytes], command: str, limit: float) -> ScriptResult:
        script = (
            f"{{ {command}\n}} </dev/null\n"
            f"printf '%s%d\\n' '{self._out}' \"$?\"; printf '%s\\n' '{self._err}' >&2\n"
        ).encode()
        assert proc.stdin is not None
        assert proc.stdout is not None
        assert proc.stderr is not None
        out, err = _Stream(), _Stream()
        code: int | None = None
        err_end: int | None = None
        out_end = 0
        deadline = time.monotonic() + limit
        with selectors.DefaultSelector() as sel:
            os.set_blocking(proc.stdin.fileno(), False)
            sel.register(proc.stdin, selectors.EVENT_WRITE)
            sel.register(proc.stdout, selectors.EVENT_READ, out)
            sel.register(proc.stderr, selectors.EVENT_READ, err)
            pending = memoryview(script)
            while code is None or err_end is None:
                left = deadline - time.monotonic()
                if left <= 0 or not sel.get_map() or self._closed:
                    break
                for key, _ in sel.select(min(left, 1.0)):
                    if key.fileobj is proc.stdin:
                        try:
                            pending = pending[os.write(key.fd, pending) :]
                        except BlockingIOError:
                            continue
                        except BrokenPipeError:
                            pending = pending[:0]
                        if not pending:
                            sel.unregister(proc.stdin)
                        continue
                    chunk = os.read(key.fd, 1 << 16)
                    if not chunk:
                        sel.unregister(key.fileobj)
                        continue
                    key.data.add(chunk)
                if code is None and (found := self._done.search(out.data)):
                    code, out_end = int(found.group(1)), found.start()
                if err_end is None:
                    at = err.data.find(f"{self._err}\n".encode())
                    err_end = None if at < 0 else at
        if code is not None and err_end is not None:
            return ScriptResult(code=code, stdout=out.text(out_end), stderr=err.text(err_end))
        if not self._closed and proc.poll() is None and time.monotonic() >= deadline:
            self._closed = True
            _signal(proc)
            _reap(proc)
            note = f"\nkilled after {limit:g} s: the shell is closed"
            return ScriptResult(
                code=-1,
                stdout=out.text(len(out.data)),
                stderr=err.text(len(err.data)) + note,
                killed=True,
            )
        # The shell ended (`exit`, or killed as the agent phase ended): what it printed and
        # its status; later calls fail.
        self._closed = True
        _signal(proc)
        ended = _reap(proc)
        return ScriptResult(
            code=ended if ended is not None else -1,
            stdout=out.text(len(out.data)),
            stderr=err.text(len(err.data)),
        )


def _signal(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL to the shell's process group (its session's leader is the shell)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)


def _reap(proc: subprocess.Popen[bytes]) -> int | None:
    """Wait for the shell and close its pipes; its exit status (None if it did not end)."""
    ended: int | None = None
    with contextlib.suppress(subprocess.TimeoutExpired):
        ended = proc.wait(timeout=5)
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()
    return ended
