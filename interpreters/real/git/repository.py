"""The private repository of a baseline: record it, load it, check its base tree out.

Interpreter side (processes, files); performs the baseline half of SPEC §4. The baseline is a
folder writable by root only, holding a private bare repository: the initial commit, fetched
out of the agent's `.git` (only `upload-pack` enters it, which runs no hook and no configured
command), and the base tree, a snapshot of the tree staged as a capture stages it. As root, what
the tree's owner fetched or staged in the scratch folder is copied in by root.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from returns.result import Failure, Result, Success

from interpreters.real.git import kept_index
from interpreters.real.git.command import GitError, GitFailure, Scratch, check_apart, scratch, why
from interpreters.real.git.layout import lay_out, reader_of
from interpreters.real.git.staging import stage

_REPO = "repo.git"
_META = "baseline.json"
_INDEX = "index"
_OID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?")
_LOOSE_DIR = re.compile(r"[0-9a-f]{2}")
_LOOSE_FILE = re.compile(r"[0-9a-f]{38}(?:[0-9a-f]{24})?")
_PACK_FILE = re.compile(r"pack-[0-9a-f]{40}(?:[0-9a-f]{24})?\.(?:pack|idx|rev)")

REPO_COPY = "repo"
"""The baseline folder's copy of the whole tree, ignored files included: the grading repo."""


@dataclass(frozen=True, slots=True)
class Baseline:
    """A recorded baseline: the folder holding it, the initial commit and the base tree."""

    path: Path
    commit: str
    base_tree: str
    gitlinks: bool | None = None
    """Whether the base tree holds gitlinks (None: not known, for a baseline taken from the
    root commit or recorded before it was noted)."""

    @property
    def repository(self) -> Path:
        """The private bare repository."""
        return self.path / _REPO

    @property
    def objects(self) -> Path:
        """The object store of the private repository."""
        return self.repository / "objects"

    @property
    def index(self) -> Path | None:
        """The kept index (`kept_index`), when the base was staged from the tree; None for a
        baseline taken from the root commit, or recorded before indexes were kept."""
        path = self.path / _INDEX
        return path if path.is_file() and not path.is_symlink() else None

    @property
    def repo_copy(self) -> Path | None:
        """The pristine copy of the whole tree kept beside the baseline (`repo`), if any."""
        copy = self.path / REPO_COPY
        return copy if copy.is_dir() and not copy.is_symlink() else None


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
        check_apart(source, into)
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
    except (GitError, OSError, ValueError) as exc:
        shutil.rmtree(into / _REPO, ignore_errors=True)
        for name in (_META, _INDEX):
            with contextlib.suppress(OSError):
                (into / name).unlink()
        if created:
            with contextlib.suppress(OSError):
                into.rmdir()
        return Failure(_failure(f"cannot record the baseline of {source}: {why(exc)}"))
    return Success(baseline)


def _failure(text: str) -> GitFailure:
    return GitFailure(" ".join(text.split()))


def _record(source: Path, into: Path, *, from_root: bool) -> Baseline:
    reader = reader_of(source)
    repo = into / _REPO
    with scratch(reader) as s:
        s.init(repo)
        landing = repo if reader is None else s.reader_repository("fetch.git")
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
        links = None
        if from_root:
            base = s.git(["rev-parse", "--verify", f"{commit}^{{tree}}"], env=own).text()
        else:
            stage_repo = s.top / "repo"
            lay_out(stage_repo)
            since = kept_index.trust_since()
            base, _left_out = stage(s, source, commit, repo=stage_repo, alternates=repo / "objects")
            _import_objects(s.work / "objects", repo / "objects")
            links = kept_index.keep(
                s.work / "index", into / _INDEX, since=since, oid_length=len(base)
            )
        # One transaction; update-ref also checks that both objects are there.
        updates = f"update refs/ssegrade/initial {commit}\nupdate refs/ssegrade/base {base}\n"
        if landing == repo:
            updates += f"delete {fetched}\n"
        s.git(["update-ref", "--stdin"], env=own, stdin=updates.encode())
    fields: dict[str, object] = {"format": 1, "commit": commit, "base_tree": base}
    if links is not None:
        fields["gitlinks"] = links
    (into / _META).write_text(json.dumps(fields) + "\n")
    return Baseline(into, commit, base, links)


def _verify(s: Scratch, repo: Path, commit: str, base: str) -> None:
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
    links = meta.get("gitlinks")
    baseline = Baseline(into, commit, base, links if isinstance(links, bool) else None)
    try:
        with scratch() as s:
            _verify(s, baseline.repository, commit, base)
    except (GitError, OSError, ValueError) as exc:
        return Failure(_failure(f"broken baseline in {into}: {why(exc)}"))
    return Success(baseline)


def checkout_baseline(baseline: Baseline, dest: Path) -> Result[None, GitFailure]:
    """Write the base snapshot's files into `dest` (new or empty): a pristine grading repo.

    It has no `.git`: patches are applied to it with a neutral `GIT_DIR`.
    """
    dest = Path(os.path.abspath(dest))
    try:
        if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
            return Failure(_failure(f"grading repo folder is not empty: {dest}"))
        dest.mkdir(parents=True, exist_ok=True)
        with scratch() as s:
            repo = s.top / "repo"
            lay_out(repo)
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
    except (GitError, OSError) as exc:
        return Failure(_failure(f"cannot check out the baseline into {dest}: {why(exc)}"))
    return Success(None)
