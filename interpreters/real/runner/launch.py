"""One script process: start it (through its `#!` interpreter when it lacks the exec bit),
wait for it until its limit, kill it, and leave nothing it started running.

Interpreter layer (processes). The script runs as the runner account in a session of its own,
stdin `/dev/null`, its output in the files it is given, contained by its `Confinement`; after
it, whatever its outcome, what it started is swept, and no process outside its containment is
ever signalled. The log and the answer are `script.py`'s.
"""

from __future__ import annotations

import errno
import math
import os
import shlex
import shutil
import signal
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from interpreters.real.runner.account import Runner, isolated
from interpreters.real.runner.containment import Confinement
from interpreters.real.runner.launcher import launch
from interpreters.real.runner.policy import ContainmentRefused
from interpreters.real.runner.processes import (
    RUN_VAR,
    SWEEP_SECONDS,
    Proc,
    children_of,
    environ,
    kill_group,
    sweep,
    wait_exit,
)


@dataclass(slots=True)
class ScriptRun:
    """One script run: what to start, where its output goes, what to say in its log."""

    runner: Runner
    command: list[str]
    cwd: Path
    env: dict[str, str]
    confinement: Confinement
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
        try:
            self.confinement.open(self.cwd)
        except (OSError, ContainmentRefused) as exc:
            self.confinement.close()
            return -1, False, f"ssegrade: cannot contain the script: {_reason(exc)}"
        try:
            return self._run(limit)
        finally:
            self.confinement.close()

    def _run(self, limit: float) -> tuple[int, bool, str | None]:
        # Our children before the start: orphans the script hands back to us are the others.
        # A namespace keeps its orphans: a contained run needs no such list.
        contained = self.confinement.contained
        before = frozenset[int]() if contained else children_of(os.getpid())
        proc = self.start()
        if isinstance(proc, str):
            return -1, False, proc
        killed = ended = False
        me, my_group, leader = os.getpid(), os.getpgid(0), proc.pid
        marker = f"{RUN_VAR}={self.env[RUN_VAR]}".encode()

        def started_by_script(item: Proc) -> bool:
            orphan = (
                not contained
                and item.ppid == me
                and item.pid not in before
                and item.pgid != my_group
            )
            return leader in (item.pgid, item.sid) or orphan or marker in environ(item.pid)

        try:
            ended = wait_exit(proc, max(0.0, limit) if math.isfinite(limit) else None)
            if not ended:
                killed = True
                self.confinement.kill(leader)
                kill_group(leader)
                wait_exit(proc, SWEEP_SECONDS)
        finally:
            # Whatever happened (also an exception raised into us while waiting), nothing the
            # script started survives; the leader is reaped last so that its process group and
            # session ids cannot be taken by an unrelated process meanwhile. A namespace that
            # ended by itself took everything with it: only the weaker containment, or an
            # abnormal end, needs the sweep.
            if not ended:
                self.confinement.kill(leader)
            kill_group(leader)
            if not (ended and contained):
                _, survivors = sweep(started_by_script, spare=before | {leader})
                if survivors:
                    self.notes.append(
                        f"warning: {len(survivors)} processes survived the clean-up: {survivors}"
                    )
            try:
                status = proc.wait(timeout=SWEEP_SECONDS)
            except subprocess.TimeoutExpired:
                self.notes.append("warning: the script's process could not be reaped")
                status = -signal.SIGKILL
        if killed:
            return -1, True, None
        if status < 0:
            self.notes.append(f"killed by signal {_signal_name(-status)}")
            return 128 - status, False, None
        if status > 128 and contained:
            self.notes.append(
                f"exit code {status}: killed by signal {_signal_name(status - 128)}, "
                "or exited with that code"
            )
        return status, False, None

    def start(self) -> subprocess.Popen[bytes] | str:
        """Start the script (through its `#!` interpreter when it lacks the exec bit); a
        string says why it could not start."""
        command = self.command
        try:
            return self.popen(command)
        except (OSError, subprocess.SubprocessError, ValueError) as exc:
            first = exc
        said = self._containment_failure()
        if said is not None:
            return said
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

    def _containment_failure(self) -> str | None:
        """The line the child wrote when a step of its containment failed (see
        `Confinement.preexec`), taken out of its stderr; None when there is none."""
        self.err.seek(0)
        lines = self.err.read().decode(errors="replace").splitlines()
        self.err.seek(0, os.SEEK_END)
        found = [line for line in lines if line.startswith("ssegrade: cannot contain")]
        if not found:
            return None
        self.err.seek(0)
        self.err.truncate()
        return found[-1]

    def popen(self, command: list[str]) -> subprocess.Popen[bytes]:
        """`Popen` in a new session, stdin `/dev/null`, output to our files: contained, or
        as the runner directly; forked by the launcher thread (see `launcher`)."""
        contained = self.confinement.contained
        as_runner = isolated(self.runner) and not contained
        if contained:
            _check_executable(command[0], self.cwd, self.env.get("PATH", ""))
        preexec: Callable[[], None] = self.confinement.preexec()
        wrapped = self.confinement.command(command)

        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                wrapped,
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
                preexec_fn=preexec,  # noqa: PLW1509 - system calls only (Confinement.preexec)
            )

        return launch(start)


def _check_executable(program: str, cwd: Path, path: str) -> None:
    """Raise what `execve` would for `program`, before it is started inside the namespace
    (where a failure would only be an exit code). Looked up on the script's own `PATH`: the
    runner executes it, never root (what root starts is found by `programs`)."""
    if "/" in program:
        found: str | None = os.path.join(cwd, program)
    else:
        found = shutil.which(program, path=path)
        if found is None:
            raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)
    assert found is not None
    try:
        fd = os.open(found, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise type(exc)(exc.errno, exc.strerror, program) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or not info.st_mode & 0o111:
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), program)
        start = os.read(fd, 4)
    finally:
        os.close(fd)
    if not start.startswith((b"#!", b"\x7fELF")):
        raise OSError(errno.ENOEXEC, os.strerror(errno.ENOEXEC), program)
    interpreter = _shebang(Path(found)) if start.startswith(b"#!") else None
    missing = interpreter is not None and not os.access(interpreter[0], os.X_OK)
    if missing and interpreter is not None and interpreter[0].startswith("/"):
        # As execve says it: the script's own name, "no such file" (its #! line's interpreter
        # is missing, or not executable).
        raise FileNotFoundError(errno.ENOENT, os.strerror(errno.ENOENT), program)


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        where = f" ({exc.filename})" if exc.filename else ""
        return f"{exc.strerror}{where}"
    return str(exc) or type(exc).__name__


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


def _prepare_home(home: Path, runner: Runner) -> None:
    if home.is_dir():
        return
    home.parent.mkdir(parents=True, exist_ok=True)
    os.mkdir(home, 0o700)
    if isolated(runner):
        os.chown(home, runner.uid, runner.gid, follow_symlinks=False)


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return str(number)
