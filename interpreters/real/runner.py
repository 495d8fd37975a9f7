"""Running untrusted task scripts for real: the runner account, one script run, the clean-up.

Interpreter layer (performs I/O; Linux only: it reads `/proc`). Task scripts (build, tests, PoC
runner) run the agent's code, so they are treated as hostile:

- as root they run as the **runner** account (never root) with no supplementary groups; as an
  ordinary user they run as that user (no isolation);
- each runs in a new session (so in its own process group, and without a controlling terminal),
  stdin `/dev/null`, a minimal environment that carries two marker variables (the session and
  the run), output captured to unnamed files (no bound on disk, the last 1 MiB kept in memory);
- after every script, whatever its outcome, everything it started is killed: its process
  group and session, every process carrying its run marker, the descendants of those, orphans
  that were handed back to us (this process is a *child subreaper*, so daemons that double-fork
  come back to us instead of init). No other process is ever signalled. Zombies are
  reaped. Then the output is read and the log file written.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import math
import os
import pwd
import re
import secrets
import select
import shlex
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from returns.result import Failure, Result, Success

from ssegrade.effects import ScriptResult

__all__ = [
    "DEFAULT_PATH",
    "OUTPUT_KEPT",
    "RUN_VAR",
    "SESSION_VAR",
    "Runner",
    "RunnerError",
    "kill_session",
    "new_session",
    "resolve_runner",
    "run_script",
]

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
OUTPUT_KEPT = 1 << 20
"""Bytes of stdout and of stderr kept in memory (the last ones); the log file has them all."""
SESSION_VAR = "SSEGRADE_SESSION"
RUN_VAR = "SSEGRADE_RUN"

_NAME = re.compile(r"[a-z_][a-z0-9_-]{0,31}\Z")
_NOLOGIN = ("/usr/sbin/nologin", "/sbin/nologin", "/usr/bin/nologin", "/bin/false")
_PR_SET_CHILD_SUBREAPER = 36
_SWEEP_SECONDS = 10.0
_TOOL_ENV = {"PATH": DEFAULT_PATH, "LC_ALL": "C"}


# ---------------------------------------------------------------------------- the runner


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
    useradd = shutil.which("useradd", path=DEFAULT_PATH)
    if useradd is None:
        return RunnerError(
            f"the runner user {name!r} does not exist and useradd is missing: "
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
            command, env=_TOOL_ENV, capture_output=True, text=True, timeout=60, check=False
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


# ---------------------------------------------------------------------------- sessions


_DEFAULT_SESSION = secrets.token_hex(8)


def new_session() -> str:
    """A fresh session token for `run_script(session=…)` and `kill_session`."""
    return secrets.token_hex(8)


def kill_session(runner: Runner, session: str | None = None) -> int:
    """Kill every process of a runner session and reap those that are our children.

    Kills the processes whose environment carries `session` (any ssegrade session when
    `None`) and their descendants, and nothing else. Answers how many processes were found
    (0: nothing was left running).
    """
    marker = None if session is None else f"{SESSION_VAR}={session}".encode()

    def carries_session(proc: _Proc) -> bool:
        entries = _environ(proc.pid)
        if marker is not None:
            return marker in entries
        return any(entry.startswith(f"{SESSION_VAR}=".encode()) for entry in entries)

    # Children we already have are someone's `Popen`: reaping them would steal their status.
    found, _ = _sweep(runner, carries_session, spare=_children_of(os.getpid()))
    return found


# ---------------------------------------------------------------------------- one script


def run_script(
    runner: Runner,
    argv: Sequence[str],
    cwd: Path,
    *,
    home: Path,
    limit: float,
    log_path: Path,
    label: str,
    session: str | None = None,
    path: str | None = None,
) -> ScriptResult:
    """Run `argv` in `cwd` as `runner`, killed after `limit` seconds; clean up; log it.

    The environment is `PATH` (`path`, default: ours without relative entries), `HOME` and
    `TMPDIR` = `home` (made if missing, owned by the runner), `LANG`/`LC_ALL` = `C.UTF-8` and
    the session and run markers. After the script (passed, failed or killed) every process it
    started is killed. The answer keeps the last `OUTPUT_KEPT` bytes of stdout and of stderr
    (with a first line saying how much was cut); the log at `log_path` has the command, exit
    code, duration, whether it was killed, and the whole output. A script killed by its limit
    answers code -1, `killed`, and a last stderr line saying so; one that cannot start answers
    code -1 with the reason on stderr (one with a `#!` line but no exec bit is run through its
    interpreter, with a warning in the log). A script killed by a signal answers 128 + the
    signal number, as shells do. Never raises for what the script does.
    """
    _ensure_subreaper()
    run_id = secrets.token_hex(8)
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with (
        tempfile.TemporaryFile(dir=log_path.parent) as out,
        tempfile.TemporaryFile(dir=log_path.parent) as err,
    ):
        run = _ScriptRun(
            runner=runner,
            command=list(argv),
            cwd=cwd,
            env=_script_env(home, session or _DEFAULT_SESSION, run_id, path),
            marker=f"{RUN_VAR}={run_id}".encode(),
            out=out,
            err=err,
        )
        start = time.monotonic()
        code, killed, start_error = run.run(home, limit)
        seconds = time.monotonic() - start
        if start_error is not None:
            err.write(start_error.encode() + b"\n")
        if killed:
            ends_line = err.seek(0, os.SEEK_END) == 0 or _last_byte(err) == b"\n"
            err.write((b"" if ends_line else b"\n") + _killed_line(limit).encode() + b"\n")
        header = [
            f"label: {label}",
            f"command: {shlex.join(run.command)}",
            f"cwd: {cwd}",
            f"user: {_who(runner)}",
            f"time limit: {limit:g} s",
            f"exit code: {code}",
            f"duration: {seconds:.3f} s",
            f"killed: {f'yes, after {limit:g} s (time limit)' if killed else 'no'}",
            *run.notes,
        ]
        log_file = _write_log(log_path, header, out, err)
        return ScriptResult(
            code=code,
            stdout=_tail(out, log_file),
            stderr=_tail(err, log_file),
            seconds=round(seconds, 3),
            killed=killed,
            log_file=log_file,
        )


@dataclass(slots=True)
class _ScriptRun:
    """One script run: what to start, where its output goes, what to say in its log."""

    runner: Runner
    command: list[str]
    cwd: Path
    env: dict[str, str]
    marker: bytes
    out: IO[bytes]
    err: IO[bytes]
    notes: list[str] = field(default_factory=list)

    def run(self, home: Path, limit: float) -> tuple[int, bool, str | None]:
        """Start, wait, kill, clean up: answers (code, killed, why it could not start)."""
        if not self.command:
            return -1, False, "ssegrade: nothing to run (empty command)"
        try:
            _prepare_home(home, self.runner)
        except OSError as exc:
            return -1, False, f"ssegrade: cannot prepare HOME {home}: {_reason(exc)}"
        before = _children_of(os.getpid())
        proc = self.start()
        if isinstance(proc, str):
            return -1, False, proc
        killed = False
        me, my_group, leader = os.getpid(), os.getpgid(0), proc.pid

        def started_by_script(item: _Proc) -> bool:
            orphan = item.ppid == me and item.pid not in before and item.pgid != my_group
            return leader in (item.pgid, item.sid) or orphan or self.marker in _environ(item.pid)

        try:
            if not _wait_exit(proc, max(0.0, limit) if math.isfinite(limit) else None):
                killed = True
                _kill_group(leader)
                _wait_exit(proc, _SWEEP_SECONDS)
        finally:
            # Whatever happened (also an exception raised into us while waiting), nothing the
            # script started survives; the leader is reaped last so that its process group and
            # session ids cannot be taken by an unrelated process meanwhile.
            _kill_group(leader)
            _, survivors = _sweep(self.runner, started_by_script, spare=before | {leader})
            if survivors:
                self.notes.append(
                    f"warning: {len(survivors)} processes survived the clean-up: {survivors}"
                )
            try:
                status = proc.wait(timeout=_SWEEP_SECONDS)
            except subprocess.TimeoutExpired:
                self.notes.append("warning: the script's process could not be reaped")
                status = -signal.SIGKILL
        if killed:
            return -1, True, None
        if status < 0:
            self.notes.append(f"killed by signal {_signal_name(-status)}")
            return 128 - status, False, None
        return status, False, None

    def start(self) -> subprocess.Popen[bytes] | str:
        """Start the script (through its `#!` interpreter when it lacks the exec bit); a
        string says why it could not start."""
        command = self.command
        try:
            return self.popen(command)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            first = exc
        if not isinstance(first, OSError) or first.filename != command[0]:
            return f"ssegrade: cannot start {command[0]}: {_reason(first)}"
        interpreter = _shebang(self.cwd / command[0]) if "/" in command[0] else None
        if first.errno in (errno.EACCES, errno.ENOEXEC) and interpreter:
            through = [*interpreter, *command]
            self.notes.append(
                f"warning: {command[0]} is not executable; ran it through its #! interpreter "
                f"({shlex.join(interpreter)})"
            )
            self.command = through
            try:
                return self.popen(through)
            except (OSError, subprocess.SubprocessError, ValueError) as exc:
                return f"ssegrade: cannot start {shlex.join(through)}: {_reason(exc)}"
        hints = {
            errno.EACCES: " (no exec bit, and no #! line to run it through)",
            errno.ENOEXEC: " (not a program, and no #! line)",
            errno.ENOENT: " (or the interpreter on its #! line is missing)" if interpreter else "",
        }
        hint = hints.get(first.errno or 0, "")
        return f"ssegrade: cannot start {command[0]}: {_reason(first)}{hint}"

    def popen(self, command: list[str]) -> subprocess.Popen[bytes]:
        """`Popen` as the runner, in a new session, stdin `/dev/null`, output to our files."""
        as_runner = _isolated(self.runner)
        return subprocess.Popen(
            command,
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=self.out,
            stderr=self.err,
            close_fds=True,
            # A new session: its own process group (killed as one), and no controlling
            # terminal (a script cannot read from or write to the grader's terminal).
            start_new_session=True,
            umask=0o022,
            user=self.runner.uid if as_runner else None,
            group=self.runner.gid if as_runner else None,
            extra_groups=[] if as_runner else None,
        )


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


def _who(runner: Runner) -> str:
    if _isolated(runner):
        return f"{runner.name or runner.uid} (uid {runner.uid}, gid {runner.gid})"
    return f"{runner.name or runner.uid} (the current user; no isolation)"


def _shebang(script: Path) -> list[str] | None:
    """The interpreter (and its one optional argument) on the `#!` line of `script`."""
    try:
        fd = os.open(script, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None  # a FIFO would block, a device would say nothing useful
        head = os.read(fd, 256)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    line = head[2:].split(b"\n", 1)[0].strip().decode(errors="replace")
    if not line:
        return None
    # As Linux does: the interpreter, then everything after it as one argument.
    parts = line.split(None, 1)
    return parts if len(parts) == 2 else [parts[0]]


def _script_env(home: Path, session: str, run_id: str, path: str | None) -> dict[str, str]:
    if path is None:
        kept = [part for part in os.environ.get("PATH", "").split(os.pathsep) if part[:1] == "/"]
        path = os.pathsep.join(kept) if kept else DEFAULT_PATH
    return {
        "PATH": path,
        "HOME": os.fspath(home),
        "TMPDIR": os.fspath(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        SESSION_VAR: session,
        RUN_VAR: run_id,
    }


def _prepare_home(home: Path, runner: Runner) -> None:
    if home.is_dir():
        return
    home.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(home, 0o700)
    if _isolated(runner):
        os.chown(home, runner.uid, runner.gid, follow_symlinks=False)


def _isolated(runner: Runner) -> bool:
    return runner.isolated and os.geteuid() == 0 and runner.uid != 0


def _wait_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> bool:
    """Wait until `proc` exits, without reaping it; `False` when `timeout` passed first."""
    try:
        pidfd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        try:  # an old kernel: wait (and reap) the usual way
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            return False
        return True
    try:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
        return bool(poller.poll(None if timeout is None else math.ceil(timeout * 1000)))
    finally:
        os.close(pidfd)


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)


def _killed_line(limit: float) -> str:
    return f"ssegrade: killed after {limit:g} s (the script's time limit)"


def _last_byte(stream: IO[bytes]) -> bytes:
    stream.seek(-1, os.SEEK_END)
    last = stream.read(1)
    stream.seek(0, os.SEEK_END)
    return last


def _tail(stream: IO[bytes], log_file: str | None) -> str:
    """The last `OUTPUT_KEPT` bytes of `stream` as text, with a line saying what was cut."""
    size = stream.seek(0, os.SEEK_END)
    if size <= OUTPUT_KEPT:
        stream.seek(0)
        return stream.read().decode(errors="replace")
    stream.seek(size - OUTPUT_KEPT)
    kept = stream.read(OUTPUT_KEPT)
    skip = 0
    while skip < 3 and skip < len(kept) and kept[skip] & 0xC0 == 0x80:
        skip += 1  # do not start in the middle of a UTF-8 sequence
    where = f"; the whole output is in {log_file}" if log_file else ""
    cut = size - len(kept) + skip
    return f"[ssegrade: the first {cut} bytes were cut{where}]\n" + kept[skip:].decode(
        errors="replace"
    )


def _write_log(log_path: Path, header: list[str], out: IO[bytes], err: IO[bytes]) -> str | None:
    """Write the log file; answers its path, or `None` when it could not be written."""
    try:
        with open(log_path, "wb") as log:
            log.write(("\n".join(header) + "\n").encode(errors="replace"))
            for name, stream in (("stdout", out), ("stderr", err)):
                size = stream.seek(0, os.SEEK_END)
                log.write(f"--- {name} ({size} bytes) ---\n".encode())
                stream.seek(0)
                shutil.copyfileobj(stream, log, 1 << 20)
                if size and _last_byte(stream) != b"\n":
                    log.write(b"\n")
            log.write(b"--- end ---\n")
        os.chmod(log_path, 0o644)
    except OSError:
        return None
    return os.fspath(log_path)


# ---------------------------------------------------------------------------- processes


@dataclass(frozen=True, slots=True)
class _Proc:
    pid: int
    ppid: int
    pgid: int
    sid: int
    zombie: bool


_reaper = {"pid": 0}


def _ensure_subreaper() -> None:
    """Make this process a child subreaper (once per process): orphans come back to us."""
    if _reaper["pid"] == os.getpid():
        return
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(_PR_SET_CHILD_SUBREAPER, ctypes.c_ulong(1), 0, 0, 0) == 0:
            _reaper["pid"] = os.getpid()


def _processes() -> dict[int, _Proc]:
    table: dict[int, _Proc] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as stat_file:
                data = stat_file.read()
        except OSError:
            continue  # gone meanwhile
        fields = data[data.rindex(b")") + 2 :].split()
        pid = int(name)
        table[pid] = _Proc(
            pid=pid,
            ppid=int(fields[1]),
            pgid=int(fields[2]),
            sid=int(fields[3]),
            zombie=fields[0] in (b"Z", b"X"),
        )
    return table


def _children_of(pid: int) -> frozenset[int]:
    return frozenset(p.pid for p in _processes().values() if p.ppid == pid)


def _environ(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as environ:
            return environ.read().split(b"\0")
    except OSError:
        return []


def _ancestors(table: dict[int, _Proc]) -> set[int]:
    found = {os.getpid(), 1}
    pid = os.getppid()
    while pid > 1 and pid not in found:
        found.add(pid)
        item = table.get(pid)
        pid = item.ppid if item is not None else 0
    return found


def _sweep(
    runner: Runner, matches: Callable[[_Proc], bool], *, spare: frozenset[int]
) -> tuple[int, list[int]]:
    """Kill what `matches` (and its descendants) until none is
    left, reaping our zombie children among them, except `spare` and those in our own process
    group: some `Popen` waits for those, and reaping them would make it report exit status 0.
    (A script can never join our process group: it runs in a session of its own.)

    Answers how many processes were killed and which ones were still alive at the deadline.
    """
    me, my_group = os.getpid(), os.getpgid(0)
    table = _processes()
    protected = _ancestors(table)
    killed: set[int] = set()  # killed and not yet reaped
    count: set[int] = set()
    deadline = time.monotonic() + _SWEEP_SECONDS
    delay = 0.001
    while True:
        live: set[int] = set()
        reap: list[int] = []
        for item in table.values():
            if item.pid in protected:
                continue
            hit = matches(item)
            if item.zombie:
                ours = item.ppid == me and item.pid not in spare and item.pgid != my_group
                if ours and (hit or item.pid in killed):
                    reap.append(item.pid)
            elif hit:
                live.add(item.pid)
        live |= _descendants(table, live) - protected
        for pid in live:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= live
        count |= live
        for pid in reap:
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
            killed.discard(pid)  # reaped: its pid may be reused from now on
        if not live and not reap:
            return len(count), []
        if time.monotonic() > deadline:
            return len(count), sorted(live)
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
        table = _processes()


def _descendants(table: dict[int, _Proc], roots: set[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for item in table.values():
        if not item.zombie:
            children.setdefault(item.ppid, []).append(item.pid)
    found: set[int] = set()
    todo = list(roots)
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found
