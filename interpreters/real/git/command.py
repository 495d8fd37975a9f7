"""Running one hermetic git command, in a fresh scratch folder, killed at its deadline.

Interpreter side (processes, files). Every git command starts from an empty environment
(`Scratch.environment`, SPEC §4): a fixed `PATH`, `HOME` and `XDG_CONFIG_HOME` in an empty
read-only folder, no system or global configuration or attributes, and an explicit `GIT_DIR`,
`GIT_INDEX_FILE` and (when a tree is read) `GIT_WORK_TREE`. git itself, and the `PATH` it
finds its helpers on, come from the search path root trusts (`programs`), never from ours.
Each operation works in a `scratch` folder the agent cannot have prepared; as root, the
commands that read a tree owned by another user run as that user (`layout.reader_of`), writing only
in the part of the folder given to them.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import itertools
import os
import shutil
import stat
import sys
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sh

from interpreters.real.git.layout import ATTRIBUTES, CONFIG, Ids, lay_out
from interpreters.real.programs import program, search_path
from interpreters.real.runner.guarding import scratch_folder
from ssegrade.internal.errors import SsegradeError
from ssegrade.internal.run import Deadline

TIMEOUT_SECONDS = 3600.0
"""Limit of one git command when no deadline is given."""


@dataclass(frozen=True, slots=True)
class GitFailure:
    """A git step that failed; `message` is one line, suitable for stderr."""

    message: str


class GitError(SsegradeError):
    """A git command that failed, with the line worth showing."""

    def __init__(self, args: Sequence[str], code: int | None, stderr: bytes) -> None:
        self.stderr = stderr.decode("utf-8", "replace")
        verb = next((a for a in args if not a.startswith("-") and "=" not in a), "git")
        how = f"exit {code}" if code is not None else "no exit status"
        super().__init__(f"git {verb}: {_one_line(self.stderr) or how}")

    @property
    def message(self) -> str:
        """One line for a log or stderr."""
        return str(self)


def _one_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    for prefix in ("fatal:", "error:"):
        for line in lines:
            if line.startswith(prefix):
                return line
    return lines[-1] if lines else ""


@dataclass(frozen=True, slots=True)
class Out:
    """What a finished git command gave: its exit code and both streams."""

    code: int
    stdout: bytes
    stderr: bytes

    def text(self) -> str:
        """Standard output as text, stripped (an id, a list of ids)."""
        return self.stdout.decode().strip()


def _git_path() -> str:
    """git, found on the fixed search path root trusts, never on `PATH` (see `programs`).
    Raises `ProgramError`, never `GitError`: a git that cannot be run is the host's fault,
    never a patch that does not apply or a tree that cannot be read."""
    return program("git")


@functools.cache
def _git_command() -> Any:
    # sh returns untyped objects: this is the one place they come from.
    return sh.Command(_git_path()).bake(_tty_out=False, _truncate_exc=False)


@functools.cache
def _python_command() -> Any:
    # Our own interpreter, where its links lead: a virtual environment's folder may be closed
    # to the reader, the interpreter it links to is not.
    return sh.Command(os.path.realpath(sys.executable)).bake(
        "-I", "-S", "-B", _tty_out=False, _truncate_exc=False
    )


def _timed_out(limit: float) -> bytes:
    return f"fatal: killed after {limit:.0f}s (time limit)".encode()


def _limit(until: Deadline | None) -> float:
    """Seconds a git command may take: what is left before `until`, on its own clock."""
    if until is None:
        return TIMEOUT_SECONDS
    return min(TIMEOUT_SECONDS, until.left())


def _hermetic_path() -> str:
    folders = [str(Path(_git_path()).parent)]
    folders += [folder for folder in search_path().split(":") if folder not in folders]
    return ":".join(folders)


def _become(ids: Ids, enter: Callable[[], None] | None = None) -> Callable[[], None]:
    uid, gid = ids

    def switch() -> None:
        if enter is not None:
            enter()
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return switch


@dataclass(frozen=True, slots=True)
class Scratch:
    """A fresh folder for one operation.

    `top` is ours (mode 0711); `home` is the empty read-only HOME; `work` is writable by
    `reader`, the user the tree-reading commands run as (`None`: ourselves). Every command
    is killed when `until` has passed (the grading's deadline, read on its own clock; `None`:
    after `TIMEOUT_SECONDS`).
    """

    top: Path
    home: Path
    work: Path
    reader: Ids | None
    counter: Iterator[int]
    until: Deadline | None = None

    def environment(
        self,
        git_dir: Path,
        *,
        index: Path | None = None,
        work_tree: Path | None = None,
        objects: Path | None = None,
        alternates: Path | None = None,
    ) -> dict[str, str]:
        """The hermetic environment of SPEC §4 for one command."""
        env = {
            "PATH": _hermetic_path(),
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home),
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
            "GIT_DIR": str(git_dir),
            "GIT_INDEX_FILE": str(index if index is not None else self.work / "no-index"),
        }
        if work_tree is not None:
            env["GIT_WORK_TREE"] = str(work_tree)
        if objects is not None:
            env["GIT_OBJECT_DIRECTORY"] = str(objects)
        if alternates is not None:
            env["GIT_ALTERNATE_OBJECT_DIRECTORIES"] = str(alternates)
        return env

    def git(
        self,
        args: Sequence[str],
        *,
        env: dict[str, str],
        cwd: Path | None = None,
        stdin: bytes | None = None,
        ok: Sequence[int] = (0,),
        as_reader: bool = False,
        enter: Callable[[], None] | None = None,
    ) -> Out:
        """Run git; stdin and stdout go through files (sh's pipes are slow for big data).
        `enter` is the child's first step, as root (the mount of a view), before it becomes
        the reader (with `as_reader`)."""
        return self._run(_git_command(), args, args, env, cwd, stdin, ok, as_reader, enter)

    def python(
        self, name: str, source: str, args: Sequence[str], *, cwd: Path, stdin: bytes
    ) -> Out:
        """Run the program `source` (standard library only) with our own interpreter, isolated
        (`-I -S`: no site, no environment, no user folder, not `cwd` on its import path), in
        an empty environment, killed at the deadline as git is; its failure a `GitError` that
        says `name`. It starts as us: our interpreter may be where the reader cannot reach it,
        so the program becomes the reader itself, once its imports are done."""
        command = _python_command().bake("-c", source)
        env = {"PATH": _hermetic_path(), "HOME": str(self.home), "LC_ALL": "C"}
        return self._run(command, args, [name, *args], env, cwd, stdin, (0,), False, None)

    def _run(
        self,
        command: Any,
        args: Sequence[str],
        label: Sequence[str],
        env: dict[str, str],
        cwd: Path | None,
        stdin: bytes | None,
        ok: Sequence[int],
        as_reader: bool,
        enter: Callable[[], None] | None,
    ) -> Out:
        # sh's own `_timeout` polls every 0.1 s, which costs that much on every command: a
        # timer kills the command's process group instead.
        options: dict[str, Any] = {
            "_env": env,
            "_cwd": str(cwd if cwd is not None else self.top),
            "_ok_code": list(ok),
            "_return_cmd": True,
            "_bg": True,
            "_bg_exc": False,
            "_new_group": True,
        }
        if as_reader and self.reader is not None:
            options["_preexec_fn"] = _become(self.reader, enter)
        elif enter is not None:
            options["_preexec_fn"] = enter
        number = next(self.counter)
        limit = _limit(self.until)
        if limit <= 0:
            raise GitError(label, None, _timed_out(0))
        with contextlib.ExitStack() as stack:
            out = stack.enter_context(tempfile.TemporaryFile(dir=self.top, prefix=f"out{number}-"))
            options["_out"] = out
            if stdin is not None:
                feed = stack.enter_context(tempfile.TemporaryFile(dir=self.top, prefix="in-"))
                feed.write(stdin)
                feed.seek(0)
                options["_in"] = feed
            expired = threading.Event()
            try:
                done = command(*args, **options)
            except (sh.ForkException, OSError) as exc:
                raise GitError(label, None, str(exc).encode()) from None

            def expire() -> None:
                expired.set()
                done.kill_group()

            timer = threading.Timer(limit, expire)
            timer.daemon = True
            timer.start()
            try:
                done.wait()
            except sh.ErrorReturnCode as exc:
                if expired.is_set():
                    raise GitError(label, None, _timed_out(limit)) from None
                raise GitError(label, int(exc.exit_code), bytes(exc.stderr)) from None
            finally:
                timer.cancel()
            out.seek(0)
            return Out(int(done.exit_code), out.read(), bytes(done.stderr))

    def init(self, path: Path) -> None:
        """The private repository: `git init --bare --template=`, our config and attributes."""
        self.git(["init", "--quiet", "--bare", "--template="], env=self.environment(path))
        (path / "config").unlink()
        (path / "config").write_bytes(CONFIG)
        (path / "info").mkdir(exist_ok=True)
        (path / "info" / "attributes").write_bytes(ATTRIBUTES)

    def reader_repository(self, name: str) -> Path:
        """A scratch bare repository `work/<name>` that the reader owns, laid out where only
        root can write (`top`) and moved into `work` whole: laid out in `work` itself, the
        reader could swap a path between root's writes and root's changes of mode and owner
        for a link to a file of root's."""
        laid = self.top / f"{name}.{next(self.counter)}"
        lay_out(laid, self.reader)
        into = self.work / name
        os.rename(laid, into)  # a planted link or file at `into` is an error, never followed
        return into

    def hand_over(self, path: Path) -> None:
        """Give a file root just wrote to the reader, who rewrites it next. The reader owns
        the folder and may have swapped the file meanwhile: never through a link (a symlink
        is refused, `O_NOFOLLOW`), and only a plain file of one name (a hard link to another
        file is refused), so the change of owner reaches no file but this one."""
        if self.reader is None:
            return
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        descriptor = os.open(path, flags)
        try:
            found = os.fstat(descriptor)
            if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
                raise OSError(errno.EPERM, "not a plain file of one name", str(path))
            os.fchown(descriptor, *self.reader)
        finally:
            os.close(descriptor)


@contextlib.contextmanager
def scratch(reader: Ids | None = None, until: Deadline | None = None) -> Iterator[Scratch]:
    """A fresh `Scratch` folder, removed on exit; `reader` gets its `work` part."""
    top = scratch_folder("git")  # named for this process: removed even after a kill -9
    try:
        top.chmod(0o711)
        home = top / "home"
        home.mkdir()
        home.chmod(0o555)
        work = top / "work"
        work.mkdir(mode=0o700)
        (work / "objects").mkdir(mode=0o700)
        if reader is not None:
            os.chown(work, *reader)
            os.chown(work / "objects", *reader)
        yield Scratch(top, home, work, reader, itertools.count(), until)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def check_apart(source: Path, *others: Path) -> None:
    """Refuse a scratch or baseline folder inside the tree: staging would pick it up."""
    top = Path(os.path.realpath(source))
    for other in (Path(tempfile.gettempdir()), *others):
        where = Path(os.path.realpath(other))
        if where == top or top in where.parents:
            raise ValueError(f"{where} is inside the source tree {top}")


def why(exc: Exception) -> str:
    """The reason of an error, in one line (an `OSError` with the file it concerns)."""
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
    return str(exc)
