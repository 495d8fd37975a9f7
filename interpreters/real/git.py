"""Hermetic git for the real interpreter: the baseline, the capture, its proof, and apply.

Interpreter side of the layers: this module performs what the `CaptureTree`, `ProvePatch`,
`CheckPatch`, `FreshCopy` and `ApplyDiff` effects describe (SPEC §4); the core never imports
it.

Every git command starts from an empty environment (`_environment`): a fixed `PATH`, `HOME` and
`XDG_CONFIG_HOME` in an empty read-only folder, no system or global configuration or attributes,
and an explicit `GIT_DIR`, `GIT_INDEX_FILE` and (when a tree is read) `GIT_WORK_TREE`. The
`GIT_DIR` is always one of ours, never the agent's `.git`, so nothing of the agent's configuration
(fsmonitor, external diff, filters, hooks) can run. The only git process that enters the agent's
repository is the `upload-pack` of a `git fetch`, which runs no hooks and no configured command.

Each operation works in a fresh scratch folder (`_scratch`) that the agent cannot have prepared.
As root, when the source tree belongs to another user, the commands that read the tree (and the
fetch out of its `.git`) run as that user with no supplementary groups; they write their index
and objects only in a part of the scratch folder given to that user, and root moves what must be
kept into the baseline, which stays writable by root only.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import os
import pwd
import re
import shutil
import stat
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import sh
from returns.result import Failure, Result, Success

from ssegrade.effects import ApplyError, Capture, CaptureError

__all__ = [
    "ATTRIBUTES",
    "DIFF_OPTIONS",
    "Baseline",
    "GitFailure",
    "apply_diff",
    "apply_patch",
    "capture",
    "checkout_baseline",
    "load_baseline",
    "prove",
    "record_baseline",
]

ATTRIBUTES = b"* -text -eol -crlf -ident -filter -working-tree-encoding !diff -merge -whitespace\n"
"""`info/attributes` of every private repository: no `.gitattributes` can change recorded bytes."""

DIFF_OPTIONS = (
    "-p",
    "--binary",
    "--full-index",
    "--no-renames",
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--src-prefix=a/",
    "--dst-prefix=b/",
)
"""Options of the `git diff-tree` that writes the patch (SPEC §4), verbatim."""

_CONFIG = b"""\
[core]
\trepositoryformatversion = 0
\tbare = true
\tfilemode = true
\tsymlinks = true
\tautocrlf = false
\tfsmonitor = false
\tuntrackedCache = false
[gc]
\tauto = 0
[advice]
\taddEmbeddedRepo = false
"""

TIMEOUT_SECONDS = 3600.0
"""Limit of one git command when no deadline is given."""

_REPO = "repo.git"
_META = "baseline.json"
_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_LOOSE_DIR = re.compile(r"[0-9a-f]{2}")
_LOOSE_FILE = re.compile(r"[0-9a-f]{38}(?:[0-9a-f]{24})?")
_PACK_FILE = re.compile(r"pack-[0-9a-f]{40}(?:[0-9a-f]{24})?\.(?:pack|idx|rev)")
_GITLINK = b"160000"
_NO_MODE = b"000000"
_STANDARD_PATH = ("/usr/local/bin", "/usr/bin", "/bin")

Ids = tuple[int, int]


# ---------------------------------------------------------------------------- public types


@dataclass(frozen=True, slots=True)
class GitFailure:
    """A git step that failed; `message` is one line, suitable for stderr."""

    message: str


REPO_COPY = "repo"
"""The baseline folder's copy of the whole tree, ignored files included: the grading repo."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """A recorded baseline: the folder holding it, the initial commit and the base tree."""

    path: Path
    commit: str
    base_tree: str

    @property
    def repository(self) -> Path:
        """The private bare repository."""
        return self.path / _REPO

    @property
    def objects(self) -> Path:
        """The object store of the private repository."""
        return self.repository / "objects"

    @property
    def repo_copy(self) -> Path | None:
        """The pristine copy of the whole tree kept beside the baseline (`repo`), if any."""
        copy = self.path / REPO_COPY
        return copy if copy.is_dir() and not copy.is_symlink() else None


# ---------------------------------------------------------------------------- running git


class _GitError(Exception):
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
class _Out:
    code: int
    stdout: bytes
    stderr: bytes

    def text(self) -> str:
        return self.stdout.decode().strip()


@functools.cache
def _git_path() -> str:
    found = shutil.which("git")
    if found is None:
        raise _GitError(("git",), None, b"git is not installed (not found on PATH)")
    return os.path.realpath(found)


@functools.cache
def _git_command() -> Any:
    # sh returns untyped objects: this is the one place they come from.
    return sh.Command(_git_path()).bake(_tty_out=False, _truncate_exc=False)


def _timed_out(limit: float) -> bytes:
    return f"fatal: killed after {limit:.0f}s (time limit)".encode()


def _limit(until: float | None) -> float:
    """Seconds a git command may take: until `until` (a `time.monotonic()` instant)."""
    if until is None:
        return TIMEOUT_SECONDS
    return min(TIMEOUT_SECONDS, until - time.monotonic())


def _hermetic_path() -> str:
    folders = [str(Path(_git_path()).parent)]
    folders += [folder for folder in _STANDARD_PATH if folder not in folders]
    return ":".join(folders)


def _become(ids: Ids) -> Callable[[], None]:
    uid, gid = ids

    def switch() -> None:
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)

    return switch


@dataclass(frozen=True, slots=True)
class _Scratch:
    """A fresh folder for one operation.

    `top` is ours (mode 0711); `home` is the empty read-only HOME; `work` is writable by
    `reader`, the user the tree-reading commands run as (`None`: ourselves). Every command
    is killed at `until` (a `time.monotonic()` instant; `None`: after `TIMEOUT_SECONDS`).
    """

    top: Path
    home: Path
    work: Path
    reader: Ids | None
    counter: Iterator[int]
    until: float | None = None

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
    ) -> _Out:
        """Run git; stdin and stdout go through files (sh's pipes are slow for big data)."""
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
            options["_preexec_fn"] = _become(self.reader)
        number = next(self.counter)
        limit = _limit(self.until)
        if limit <= 0:
            raise _GitError(args, None, _timed_out(0))
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
                done = _git_command()(*args, **options)
            except (sh.ForkException, OSError) as exc:
                raise _GitError(args, None, str(exc).encode()) from None

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
                    raise _GitError(args, None, _timed_out(limit)) from None
                raise _GitError(args, int(exc.exit_code), bytes(exc.stderr)) from None
            finally:
                timer.cancel()
            out.seek(0)
            return _Out(int(done.exit_code), out.read(), bytes(done.stderr))

    def init(self, path: Path) -> None:
        """The private repository: `git init --bare --template=`, our config and attributes."""
        self.git(["init", "--quiet", "--bare", "--template="], env=self.environment(path))
        (path / "config").unlink()
        (path / "config").write_bytes(_CONFIG)
        (path / "info").mkdir(exist_ok=True)
        (path / "info" / "attributes").write_bytes(ATTRIBUTES)

    def hand_over(self, path: Path) -> None:
        """Give a file root just wrote to the reader, who rewrites it next."""
        if self.reader is not None:
            os.chown(path, *self.reader)


@contextlib.contextmanager
def _scratch(reader: Ids | None = None, until: float | None = None) -> Iterator[_Scratch]:
    top = Path(tempfile.mkdtemp(prefix="ssegrade-git-"))
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
        yield _Scratch(top, home, work, reader, itertools.count(), until)
    finally:
        shutil.rmtree(top, ignore_errors=True)


def _lay_out(path: Path, owner: Ids | None = None) -> None:
    """A scratch bare repository with our config and attributes: the layout `git init --bare
    --template=` makes, written directly (a git process per scratch repository is costly).

    Readable by everyone; writable by `owner` only when given, else by us only.
    """
    path.mkdir()
    for folder in ("objects", "refs", "info"):
        (path / folder).mkdir()
    (path / "HEAD").write_bytes(b"ref: refs/heads/main\n")
    (path / "config").write_bytes(_CONFIG)
    (path / "info" / "attributes").write_bytes(ATTRIBUTES)
    for parent, dirs, files in os.walk(path):
        for name in (".", *dirs, *files):
            entry = os.path.join(parent, name)
            os.chmod(entry, 0o755 if name in (".", *dirs) else 0o644)
            if owner is not None:
                os.chown(entry, *owner)


def _check_apart(source: Path, *others: Path) -> None:
    """Refuse a scratch or baseline folder inside the tree: staging would pick it up."""
    top = Path(os.path.realpath(source))
    for other in (Path(tempfile.gettempdir()), *others):
        where = Path(os.path.realpath(other))
        if where == top or top in where.parents:
            raise ValueError(f"{where} is inside the source tree {top}")


def _reader_of(source: Path) -> Ids | None:
    """The user the tree-reading commands run as: the tree's owner, when we are root."""
    if os.geteuid() != 0:
        return None
    owner = source.stat()
    if owner.st_uid == 0:
        return None
    try:
        gid = pwd.getpwuid(owner.st_uid).pw_gid
    except KeyError:
        gid = owner.st_gid
    return owner.st_uid, gid


# ---------------------------------------------------------------------------- staging


def _split_z(data: bytes) -> list[bytes]:
    parts = data.split(b"\0")
    if parts and not parts[-1]:
        parts.pop()
    return parts


def _index_line(mode: bytes, oid: bytes, path: bytes) -> bytes:
    return mode + b" " + oid + b"\t" + path + b"\0"


def _removal(path: bytes, oid_length: int) -> bytes:
    return _index_line(b"0", b"0" * oid_length, path)


def _special(top: Path, path: bytes) -> bool:
    """Whether `path` (relative to `top`) is a fifo, socket or device, following no symlink."""
    current = os.fsencode(top)
    parts = path.split(b"/")
    for depth, part in enumerate(parts):
        current = current + b"/" + part
        try:
            mode = os.lstat(current).st_mode
        except OSError:
            return False
        if depth < len(parts) - 1 and not stat.S_ISDIR(mode):
            return False
    return not (stat.S_ISREG(mode) or stat.S_ISLNK(mode) or stat.S_ISDIR(mode))


def _stage(
    s: _Scratch, source: Path, base: str, *, repo: Path, alternates: Path
) -> tuple[str, tuple[str, ...]]:
    """Stage `source` over `base` in a fresh private index (SPEC §4); answer the tree id written
    and the paths left out.

    Root (or we) runs the steps that need the base's objects; the reader runs those that read
    the tree. New objects go to `s.work/objects`; `alternates` holds the base's.
    """
    index = s.work / "index"
    objects = s.work / "objects"
    admin = s.environment(repo, index=index, objects=objects, alternates=alternates)
    reader = s.environment(repo, index=index, work_tree=source, objects=objects)
    oid_length = len(base)

    s.git(["read-tree", base], env=admin)
    # Gitlinks of the base leave the index while the tree is read: `add` would otherwise run
    # `git status` inside each checked-out nested repository, with that repository's config.
    listing = _split_z(s.git(["ls-files", "--stage", "-z"], env=admin).stdout)
    base_links = [entry.split(b"\t", 1)[1] for entry in listing if entry.startswith(_GITLINK)]
    if base_links:
        removals = b"".join(_removal(path, oid_length) for path in base_links)
        s.git(["update-index", "-z", "--index-info"], env=admin, stdin=removals)
    s.hand_over(index)

    # The index has no stat data: refresh hashes every file without writing objects, so `add`
    # then writes only the blobs that changed.
    tree_args: dict[str, Any] = {"env": reader, "cwd": source, "as_reader": True}
    s.git(["update-index", "-q", "--refresh"], ok=(0, 1), **tree_args)
    s.git(["add", "-A", "--ignore-errors"], ok=(0, 1), **tree_args)

    # Nested repositories stay out of the patch: every gitlink the index gained, changed or
    # lost goes back to the base's entry (or away when the base had none).
    raw = s.git(
        ["diff-index", "--cached", "-z", "--raw", "--no-renames", "--ignore-submodules=none", base],
        env=admin,
    ).stdout
    fixes: list[bytes] = []
    fields = _split_z(raw)
    for header, path in zip(fields[::2], fields[1::2], strict=True):
        src_mode, dst_mode, src_oid, _dst_oid, _status = header.lstrip(b":").split(b" ")
        if dst_mode == _GITLINK or (src_mode == _GITLINK and dst_mode == _NO_MODE):
            if src_mode == _NO_MODE:
                fixes.append(_removal(path, oid_length))
            else:
                fixes.append(_index_line(src_mode, src_oid, path))
    if fixes:
        s.git(["update-index", "-z", "--index-info"], env=admin, stdin=b"".join(fixes))
        s.hand_over(index)

    # What git left out: tracked paths still unlike the tree ("C": unreadable, or now a fifo,
    # socket or device, which leaves the index) and untracked paths it did not add ("?").
    listing = _split_z(
        s.git(["ls-files", "-z", "-t", "-m", "-o", "--exclude-standard"], **tree_args).stdout
    )
    left = {entry[2:] for entry in listing}
    special = [entry[2:] for entry in listing if entry[:2] == b"C " and _special(source, entry[2:])]
    if special:
        removals = b"".join(_removal(path, oid_length) for path in special)
        s.git(["update-index", "-z", "--index-info"], env=admin, stdin=removals)
    tree = s.git(["write-tree"], env=admin).text()
    return tree, tuple(sorted(os.fsdecode(path) for path in left))


def _import_objects(source: Path, dest: Path) -> None:
    """Copy (never link) the loose objects and packs of a scratch store into `dest`."""
    for entry in sorted(source.iterdir()):
        if entry.is_symlink():
            continue
        if entry.is_dir() and _LOOSE_DIR.fullmatch(entry.name):
            names = [f for f in entry.iterdir() if _LOOSE_FILE.fullmatch(f.name)]
            targets = [(f, dest / entry.name / f.name) for f in names]
        elif entry.is_dir() and entry.name == "pack":
            names = [f for f in entry.iterdir() if _PACK_FILE.fullmatch(f.name)]
            # The index goes last: a pack is only used once its index is there.
            names.sort(key=lambda f: f.suffix == ".idx")
            targets = [(f, dest / "pack" / f.name) for f in names]
        else:
            continue
        for src, dst in targets:
            if src.is_symlink() or not src.is_file() or dst.exists():
                continue
            dst.parent.mkdir(mode=0o755, exist_ok=True)
            shutil.copyfile(src, dst)
            dst.chmod(0o444)


# ---------------------------------------------------------------------------- baseline


def record_baseline(
    source: Path, into: Path, *, from_root: bool = False
) -> Result[Baseline, GitFailure]:
    """Record the baseline of `source` in `into` (an empty or new folder), SPEC §4.

    The private bare repository gets the initial commit by `git fetch` (never a local clone),
    and the base is a snapshot of the tree as it is now, staged like a capture. HEAD must be a
    single commit. With `from_root` (no baseline was recorded before the agent ran), the root
    commit of HEAD's history is taken instead, and the base is its tree.
    """
    source = Path(os.path.abspath(source))
    into = Path(os.path.abspath(into))
    if not source.is_dir():
        return Failure(_failure(f"source tree not found: {source}"))
    try:
        _check_apart(source, into)
        created = not into.exists()
        if not created and (not into.is_dir() or any(into.iterdir())):
            return Failure(_failure(f"baseline folder is not empty: {into}"))
        into.mkdir(mode=0o700, parents=True, exist_ok=True)
        into.chmod(0o700)
    except ValueError as exc:
        return Failure(_failure(f"cannot record the baseline of {source}: {exc}"))
    except OSError as exc:
        return Failure(_failure(f"cannot create the baseline folder {into}: {exc.strerror}"))
    try:
        baseline = _record(source, into, from_root=from_root)
    except (_GitError, OSError, ValueError) as exc:
        shutil.rmtree(into / _REPO, ignore_errors=True)
        with contextlib.suppress(OSError):
            (into / _META).unlink()
        if created:
            with contextlib.suppress(OSError):
                into.rmdir()
        return Failure(_failure(f"cannot record the baseline of {source}: {_why(exc)}"))
    return Success(baseline)


def _failure(text: str) -> GitFailure:
    return GitFailure(" ".join(text.split()))


def _why(exc: Exception) -> str:
    if isinstance(exc, OSError):
        return f"{exc.strerror or exc}: {exc.filename}" if exc.filename else str(exc)
    return str(exc)


def _record(source: Path, into: Path, *, from_root: bool) -> Baseline:
    reader = _reader_of(source)
    repo = into / _REPO
    with _scratch(reader) as s:
        s.init(repo)
        landing = repo if reader is None else s.work / "fetch.git"
        if landing != repo:
            _lay_out(landing, s.reader)
        fetched = "refs/ssegrade/fetched"
        land = s.environment(landing)
        s.git(
            [
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--no-write-fetch-head",
                "--no-auto-gc",
                # No delta search nor compression when packing loose objects (3x faster on a
                # fresh commit); data already packed is reused as it is.
                "--upload-pack=git -c pack.window=0 -c pack.compression=0 upload-pack",
                str(source / ".git"),
                f"+HEAD:{fetched}",
            ],
            env=land,
            as_reader=landing != repo,
        )
        if from_root:
            roots = s.git(["rev-list", "--max-parents=0", fetched], env=land).text().split()
            if len(roots) != 1:
                raise ValueError(f"HEAD has {len(roots)} root commits, not one")
            commit = roots[0]
        else:
            commits = s.git(["rev-list", "--max-count=2", fetched], env=land).text().split()
            if len(commits) != 1:
                raise ValueError(
                    "HEAD has more than one commit: record the baseline before the agent runs,"
                    " or from the root commit"
                )
            commit = commits[0]
        if landing != repo:
            _import_objects(landing / "objects", repo / "objects")
        own = s.environment(repo)
        if from_root:
            base = s.git(["rev-parse", "--verify", f"{commit}^{{tree}}"], env=own).text()
        else:
            stage_repo = s.top / "repo"
            _lay_out(stage_repo)
            base, _left_out = _stage(
                s, source, commit, repo=stage_repo, alternates=repo / "objects"
            )
            _import_objects(s.work / "objects", repo / "objects")
        # One transaction; update-ref also checks that both objects are there.
        updates = f"update refs/ssegrade/initial {commit}\nupdate refs/ssegrade/base {base}\n"
        if landing == repo:
            updates += f"delete {fetched}\n"
        s.git(["update-ref", "--stdin"], env=own, stdin=updates.encode())
    meta = json.dumps({"format": 1, "commit": commit, "base_tree": base}) + "\n"
    (into / _META).write_text(meta)
    return Baseline(into, commit, base)


def _verify(s: _Scratch, repo: Path, commit: str, base: str) -> None:
    answer = s.git(
        ["cat-file", "--batch-check=%(objectname) %(objecttype)"],
        env=s.environment(repo),
        stdin=f"{commit}\n{base}\n".encode(),
    ).stdout.split()
    if answer != [commit.encode(), b"commit", base.encode(), b"tree"]:
        raise ValueError(f"the private repository lacks {commit} or {base}")


def load_baseline(into: Path) -> Result[Baseline, GitFailure]:
    """Read a baseline `record_baseline` wrote in `into`, checking its objects are there."""
    into = Path(os.path.abspath(into))
    try:
        meta = json.loads((into / _META).read_text())
        commit, base = meta["commit"], meta["base_tree"]
        if not (isinstance(commit, str) and isinstance(base, str)):
            raise TypeError
        if not (_OID.fullmatch(commit) and _OID.fullmatch(base)):
            raise ValueError
    except OSError as exc:
        return Failure(_failure(f"no baseline in {into}: {exc.strerror}"))
    except (ValueError, TypeError, KeyError):
        return Failure(_failure(f"unreadable baseline: {into / _META}"))
    baseline = Baseline(into, commit, base)
    try:
        with _scratch() as s:
            _verify(s, baseline.repository, commit, base)
    except (_GitError, OSError, ValueError) as exc:
        return Failure(_failure(f"broken baseline in {into}: {_why(exc)}"))
    return Success(baseline)


# ---------------------------------------------------------------------------- capture


def capture(
    source: Path, baseline: Baseline, *, until: float | None = None
) -> Result[Capture, CaptureError]:
    """Capture the patch from the baseline's base to `source` as it is now (SPEC §4).

    Answers the patch (`git diff-tree` with fixed options, empty when nothing changed), both tree
    ids, the agent's commit messages since the initial commit, and the paths git left out.
    Every git command is killed at `until` (a `time.monotonic()` instant), failing the capture.
    """
    source = Path(os.path.abspath(source))
    if not source.is_dir():
        return Failure(CaptureError(f"source tree not found: {source}"))
    try:
        _check_apart(source)
        reader = _reader_of(source)
        with _scratch(reader, until) as s:
            repo = s.top / "repo"
            _lay_out(repo)
            base = baseline.base_tree
            new, left_out = _stage(s, source, base, repo=repo, alternates=baseline.objects)
            admin = s.environment(repo, objects=s.work / "objects", alternates=baseline.objects)
            patch = s.git(["diff-tree", *DIFF_OPTIONS, base, new], env=admin).stdout
            log = _commits_log(s, source, baseline.commit)
    except (_GitError, OSError, ValueError) as exc:
        return Failure(CaptureError(f"cannot capture the patch of {source}: {_why(exc)}"))
    return Success(Capture(patch, base, new, log, left_out))


def _commits_log(s: _Scratch, source: Path, initial: str) -> bytes:
    """The agent's commits in `initial..HEAD`, read from a fetched copy (commits only).

    Empty when `.git` is gone or broken. The fetch runs as the reader; the agent's repository
    is entered only by `upload-pack`, which runs no hook and no configured command.
    """
    landing = s.work / "log.git"
    try:
        _lay_out(landing, s.reader)
        env = s.environment(landing)
        # A named remote: the filtered fetch registers it as the promisor of the commits-only
        # copy (a bare path cannot be one).
        s.git(
            [
                "-c",
                f"remote.agent.url={source / '.git'}",
                "fetch",
                "--quiet",
                "--no-tags",
                "--no-recurse-submodules",
                "--no-write-fetch-head",
                "--no-auto-gc",
                "--upload-pack=git -c uploadpack.allowFilter=true upload-pack",
                "--filter=tree:0",
                "agent",
                "+HEAD:refs/ssegrade/agent",
            ],
            env=env,
            as_reader=True,
        )
        # The filtered fetch marked the agent's repository a promisor: forget it, so that no
        # later command tries to fetch a missing object from there.
        (landing / "config").unlink()
        (landing / "config").write_bytes(_CONFIG)
        out = s.git(
            [
                "log",
                "-z",
                "--format=%H%x00%s%x00%b",
                "--ignore-missing",
                "refs/ssegrade/agent",
                "--not",
                initial,
                "--",
            ],
            env=env,
            as_reader=True,
        ).stdout
    except (_GitError, OSError):
        return b""
    return _format_log(_split_z(out))


def _format_log(fields: list[bytes]) -> bytes:
    if len(fields) % 3:
        return b""
    lines: list[bytes] = []
    for commit, subject, body in zip(fields[::3], fields[1::3], fields[2::3], strict=True):
        lines += [commit, subject]
        if body.strip(b"\n"):
            lines.append(body.strip(b"\n"))
        lines.append(b"---")
    return b"".join(line + b"\n" for line in lines)


def prove(
    baseline: Baseline, patch: bytes, base_tree: str, *, until: float | None = None
) -> Result[str, CaptureError]:
    """The fidelity proof: apply `patch` to `base_tree` in a scratch index; answer the tree id.

    The caller compares it with the capture's new tree. Killed at `until`, as `capture` is.
    """
    try:
        with _scratch(until=until) as s:
            repo = s.top / "repo"
            _lay_out(repo)
            env = s.environment(
                repo,
                index=s.work / "index",
                objects=s.work / "objects",
                alternates=baseline.objects,
            )
            s.git(["read-tree", base_tree], env=env)
            s.git(
                ["apply", "--cached", "--binary", "--whitespace=nowarn", "--allow-empty"],
                env=env,
                stdin=patch,
            )
            return Success(s.git(["write-tree"], env=env).text())
    except (_GitError, OSError) as exc:
        return Failure(CaptureError(f"the captured patch does not apply to its base: {_why(exc)}"))


# ---------------------------------------------------------------------------- grading repo


def checkout_baseline(baseline: Baseline, dest: Path) -> Result[None, GitFailure]:
    """Write the base snapshot's files into `dest` (new or empty): a pristine grading repo.

    It has no `.git`: patches are applied to it with a neutral `GIT_DIR`.
    """
    dest = Path(os.path.abspath(dest))
    try:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            return Failure(_failure(f"grading repo folder is not empty: {dest}"))
        dest.mkdir(parents=True, exist_ok=True)
        with _scratch() as s:
            repo = s.top / "repo"
            _lay_out(repo)
            index = s.work / "index"
            env = s.environment(
                repo, index=index, objects=s.work / "objects", alternates=baseline.objects
            )
            s.git(["read-tree", baseline.base_tree], env=env)
            s.git(
                ["-c", "checkout.workers=0", "checkout-index", "--all", "--force"],
                env=s.environment(
                    repo,
                    index=index,
                    work_tree=dest,
                    objects=s.work / "objects",
                    alternates=baseline.objects,
                ),
                cwd=dest,
            )
    except (_GitError, OSError) as exc:
        return Failure(_failure(f"cannot check out the baseline into {dest}: {_why(exc)}"))
    return Success(None)


def _neutral_apply(
    tree: Path,
    args: Iterable[str],
    *,
    stdin: bytes | None,
    run_as: Ids | None,
    until: float | None,
) -> Result[None, ApplyError]:
    """`git apply` in `tree` with a neutral `GIT_DIR`: an empty repo with our config and
    attributes, so that neither the tree's attributes nor any `apply.*` setting change bytes."""
    if run_as is not None and os.geteuid() != 0 and run_as != (os.getuid(), os.getgid()):
        return Failure(ApplyError("cannot apply as another user: not running as root"))
    as_reader = run_as is not None and run_as != (os.getuid(), os.getgid())
    try:
        with _scratch(run_as if as_reader else None, until) as s:
            neutral = s.top / "neutral.git"
            _lay_out(neutral)
            env = s.environment(neutral, index=s.work / "index", work_tree=tree)
            s.git(["apply", *args], env=env, cwd=tree, stdin=stdin, as_reader=as_reader)
    except _GitError as exc:
        return Failure(ApplyError(exc.stderr.strip() or exc.message))
    except OSError as exc:
        return Failure(ApplyError(f"cannot run git apply in {tree}: {_why(exc)}"))
    return Success(None)


_PATCH_OPTIONS = ("--binary", "--whitespace=nowarn", "--allow-empty")


def check_patch(
    repo: Path, patch: bytes, *, until: float | None = None
) -> Result[None, ApplyError]:
    """Check that the patch applies to the grading repo (`git apply --check`, with a neutral
    `GIT_DIR`), without changing it; `ApplyError.log` is git's message. Killed at `until`."""
    return _neutral_apply(
        Path(os.path.abspath(repo)),
        ("--check", *_PATCH_OPTIONS),
        stdin=patch,
        run_as=None,
        until=until,
    )


def apply_patch(
    tree: Path,
    patch: bytes,
    *,
    run_as: tuple[int, int] | None = None,
    until: float | None = None,
) -> Result[None, ApplyError]:
    """Apply the patch in `tree` (a fresh copy of the grading repo): `git apply --binary
    --whitespace=nowarn --allow-empty`, with a neutral `GIT_DIR`, optionally as the given
    uid/gid; `ApplyError.log` is git's message. Killed at `until`."""
    return _neutral_apply(
        Path(os.path.abspath(tree)), _PATCH_OPTIONS, stdin=patch, run_as=run_as, until=until
    )


def apply_diff(
    workspace: Path,
    diff: Path,
    *,
    run_as: tuple[int, int] | None = None,
    until: float | None = None,
) -> Result[None, ApplyError]:
    """`git apply -p1` of the hidden tests diff inside a check's workspace, with a neutral
    `GIT_DIR`, optionally as the given uid/gid (no supplementary groups). Killed at `until`."""
    diff = Path(os.path.abspath(diff))
    return _neutral_apply(
        Path(os.path.abspath(workspace)),
        ("-p1", str(diff)),
        stdin=None,
        run_as=run_as,
        until=until,
    )


# ---------------------------------------------------------------------------- changed files


def changed_files(source: Path, baseline: Baseline) -> Result[bytes, CaptureError]:
    """The files `source` changes against the baseline's base, as git lists them: the output
    of `git diff-tree -r -z --raw --numstat --no-renames` between the base and the tree staged
    exactly as `capture` stages it (read it with `ssegrade.protocol.changed_files`)."""
    source = Path(os.path.abspath(source))
    if not source.is_dir():
        return Failure(CaptureError(f"source tree not found: {source}"))
    try:
        _check_apart(source)
        with _scratch(_reader_of(source)) as s:
            repo = s.top / "repo"
            _lay_out(repo)
            base = baseline.base_tree
            new, _left_out = _stage(s, source, base, repo=repo, alternates=baseline.objects)
            admin = s.environment(repo, objects=s.work / "objects", alternates=baseline.objects)
            listing = s.git(
                ["diff-tree", "-r", "-z", "--raw", "--numstat", "--no-renames", base, new],
                env=admin,
            ).stdout
    except (_GitError, OSError, ValueError) as exc:
        return Failure(CaptureError(f"cannot list the changed files of {source}: {_why(exc)}"))
    return Success(listing)
