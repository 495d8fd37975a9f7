"""The agent's trees and its own git, for the capture tests: repositories made from entries,
snapshots, baselines recorded and captures checked; trees aged ahead so that a baseline trusts
their stat data, and the edits an agent makes to them.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import strategies as st
from returns.result import Success

from interpreters.real import git
from ssegrade.internal.effects import Capture

Entry = tuple[str, bytes, bool]
"""("file", content, executable) or ("link", target, False)."""


def agent_env(home: Path) -> dict[str, str]:
    """The environment of the agent's own git commands."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "Agent",
        "GIT_AUTHOR_EMAIL": "agent@example.com",
        "GIT_COMMITTER_NAME": "Agent",
        "GIT_COMMITTER_EMAIL": "agent@example.com",
        "LC_ALL": "C",
    }


def run(cwd: Path, *args: str, check: bool = True) -> str:
    """Run the agent's git in `cwd`."""
    # safe.directory: the tests also play an agent whose tree belongs to another user.
    done = subprocess.run(
        ["git", "-c", "safe.directory=*", *args],
        cwd=cwd,
        env=agent_env(cwd),
        capture_output=True,
        check=False,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr.decode()}")
    return done.stdout.decode()


def write(root: Path, files: dict[str, Entry]) -> None:
    """Create files and symlinks under `root`."""
    for name, (kind, data, executable) in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "link":
            path.symlink_to(os.fsdecode(data))
        else:
            path.write_bytes(data)
            path.chmod(0o755 if executable else 0o644)


def make_repo(root: Path, files: dict[str, Entry]) -> Path:
    """A repository with one commit holding `files`."""
    root.mkdir(parents=True, exist_ok=True)
    run(root, "init", "-q", "-b", "main")
    write(root, files)
    run(root, "add", "-A")
    run(root, "commit", "-q", "--allow-empty", "-m", "initial")
    return root


def snapshot(root: Path, skip: Callable[[str], bool] = lambda _: False) -> dict[str, Entry]:
    """Files and symlinks under `root` (never followed), without `.git` and skipped paths."""
    found: dict[str, Entry] = {}
    for parent, dirs, files in os.walk(root):
        rel_parent = os.path.relpath(parent, root)
        for name in list(dirs):
            rel = os.path.normpath(os.path.join(rel_parent, name))
            full = os.path.join(parent, name)
            if name == ".git" or skip(rel):
                dirs.remove(name)
            elif os.path.islink(full):
                dirs.remove(name)
                found[rel] = ("link", os.fsencode(os.readlink(full)), False)
        for name in files:
            rel = os.path.normpath(os.path.join(rel_parent, name))
            full = os.path.join(parent, name)
            if skip(rel):
                continue
            mode = os.lstat(full).st_mode
            if stat.S_ISLNK(mode):
                found[rel] = ("link", os.fsencode(os.readlink(full)), False)
            elif stat.S_ISREG(mode):
                found[rel] = ("file", Path(full).read_bytes(), bool(mode & stat.S_IXUSR))
    return found


def record(source: Path, into: Path, *, from_root: bool = False) -> git.Baseline:
    recorded = git.record_baseline(source, into, from_root=from_root)
    baseline = recorded.value_or(None)
    assert baseline is not None, recorded
    return baseline


def capture_ok(source: Path, baseline: git.Baseline) -> Capture:
    captured = git.capture(source, baseline)
    value = captured.value_or(None)
    assert value is not None, captured
    return value


def edited(
    tmp: Path, before: dict[str, Entry], after: dict[str, Entry]
) -> tuple[Path, git.Baseline, Capture]:
    """A repo of `before` under `tmp`, its baseline recorded, then rewritten to `after` (its
    `.git` kept) and captured: the source tree, the baseline and the capture."""
    source = make_repo(tmp / "src", before)
    baseline = record(source, tmp / "baseline")
    clear(source)
    write(source, after)
    return source, baseline, capture_ok(source, baseline)


def rebuild(baseline: git.Baseline, captured: Capture, dest: Path) -> Path:
    """Pristine checkout plus the patch, after checking the fidelity proof."""
    proof = git.prove(baseline, captured.patch, captured.base_tree)
    assert proof == Success(captured.new_tree)
    assert git.checkout_baseline(baseline, dest) == Success(None)
    applied = git.apply_patch(dest, captured.patch)
    assert applied == Success(None), applied
    return dest


PAIRS = (("src/pair_a.c", "src/pair_b.c"), ("data/blob.bin", "data/twin.bin"))
"""Files of the same size and mtime: each can be swapped in for the other."""
TREE: dict[str, Entry] = {
    "README.md": ("file", b"# project\n\nSome words.\n", False),
    ".gitignore": ("file", b"*.log\nbuild/\n", False),
    "src/main.c": ("file", b"int main(void) { return run(); }\n", False),
    "src/util.c": ("file", b"int run(void) { return 0; }\n", False),
    "src/util.h": ("file", b"int run(void);\n", False),
    "src/pair_a.c": ("file", b"int a(void) { return 1; }\n", False),
    "src/pair_b.c": ("file", b"int b(void) { return 2; }\n", False),
    "lib/x/deep.py": ("file", b"def deep():\n    return 1\n", False),
    "lib/x/deeper/more.py": ("file", b"X = [1, 2, 3]\n", False),
    "data/blob.bin": ("file", bytes(range(256)) * 12, False),
    "data/twin.bin": ("file", bytes(range(255, -1, -1)) * 12, False),
    "run.sh": ("file", b"#!/bin/sh\nexec ./main\n", True),
    "link": ("link", b"README.md", False),
    "docs/a.md": ("file", b"alpha\n", False),
    "docs/b.md": ("file", b"bravo\n", False),
}
FILES = tuple(name for name, (kind, _, _) in TREE.items() if kind == "file")
OLD_MTIME = 1_600_000_000
"""The mtime both files of each pair get: old, and the same."""


def make_tree(root: Path) -> Path:
    source = make_repo(root, TREE)
    for pair in PAIRS:
        for name in pair:
            os.utime(source / name, (OLD_MTIME, OLD_MTIME))
    return source


def newest_ctime(root: Path) -> float:
    return max(os.lstat(os.path.join(p, n)).st_ctime for p, ds, fs in os.walk(root) for n in fs)


def age(roots: list[Path]) -> None:
    """Wait until every file under `roots` is older than what a baseline recorded now trusts."""
    newest = max(newest_ctime(root) for root in roots)
    while int(time.time()) - 1 <= int(newest):
        time.sleep(int(newest) + 2 - time.time())


@dataclass
class Pool:
    """Trees made and aged ahead, one per example; another is made (and aged) when none is
    left."""

    folder: Path
    ready: list[Path] = field(default_factory=list)
    made: int = 0

    def fill(self, count: int) -> None:
        for _ in range(count):
            self.made += 1
            self.ready.append(make_tree(self.folder / f"tree{self.made}" / "src"))
        age(self.ready)

    def take(self) -> Path:
        if not self.ready:
            self.fill(1)
        return self.ready.pop()


def restore_times(path: Path, seen: os.stat_result) -> None:
    os.utime(path, ns=(seen.st_atime_ns, seen.st_mtime_ns), follow_symlinks=False)


def same_size(data: bytes, size: int) -> bytes:
    """Other bytes of exactly `size` bytes."""
    return (data * (size // max(len(data), 1) + 1))[:size] if data else b"\xff" * size


def edit(source: Path, outside: Path, op: str, name: str, data: bytes) -> None:
    """One edit of the agent; `outside` is a folder beside the tree, on the same file system."""
    path = source / name
    if op in ("refused_name", "nested_repo"):  # left out of the patch, and listed as such
        folder = source / (".GIT" if op == "refused_name" else "vendored")
        folder.mkdir(exist_ok=True)
        (folder / "config").write_bytes(data)
        if op == "nested_repo":
            run(folder, "init", "-q")
        return
    if not path.is_file() or path.is_symlink():
        if op == "create" and not path.exists() and not path.parent.is_file():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        return
    seen = os.lstat(path)
    old = path.read_bytes()
    if op == "content_keep_stat":  # size and mtime restored
        new = same_size(data + b"!", len(old))
        if new == old:
            new = bytes(b ^ 1 for b in old)
        path.write_bytes(new)
        restore_times(path, seen)
    elif op == "truncate_keep_stat":
        with open(path, "wb") as out:
            out.flush()
            out.write(bytes(b ^ 0x20 for b in old))
        restore_times(path, seen)
    elif op == "swap_outside":  # same size and mtime, from elsewhere, renamed in
        stranger = outside / f"swap-{time.monotonic_ns()}"
        stranger.write_bytes(same_size(data + b"?", len(old)))
        os.chmod(stranger, seen.st_mode & 0o777)
        restore_times(stranger, seen)
        os.rename(stranger, path)
    elif op == "swap_twin":
        twin = next((b if a == name else a for a, b in PAIRS if name in (a, b)), None)
        if twin is not None and (source / twin).is_file():
            os.rename(source / twin, path)
    elif op == "hardlink_twin":
        twin = next((b if a == name else a for a, b in PAIRS if name in (a, b)), None)
        if twin is not None and (source / twin).is_file():
            linked = outside / f"linked-{time.monotonic_ns()}"
            os.link(source / twin, linked)
            os.rename(linked, path)
    elif op == "rewrite_same":
        path.write_bytes(old)
    elif op == "touch":
        os.utime(path)
    elif op == "chmod":
        path.chmod(seen.st_mode ^ 0o111)
    elif op == "chmod_keep_mtime":
        path.chmod(seen.st_mode ^ 0o100)
        restore_times(path, seen)
    elif op == "delete":
        path.unlink()
    elif op == "to_link":
        path.unlink()
        path.symlink_to("README.md")
    elif op == "to_fifo":
        path.unlink()
        os.mkfifo(path)
    elif op == "append":
        with open(path, "ab") as out:
            out.write(data or b"\n")


def clear(root: Path) -> None:
    """Remove everything in `root` but `.git`."""
    for entry in root.iterdir():
        if entry.name == ".git":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()


NAMES = ("a.txt", "b", "src/c.py", "src/d", "src/d/x", "g/h/i.bin", "new.txt", "n/m/o")
contents = st.one_of(
    st.binary(max_size=40),
    st.lists(st.sampled_from(["x", "y  ", "\r", "\0", "é", "\n", "\\"]), max_size=12).map(
        lambda parts: "".join(parts).encode()
    ),
)
entries = st.one_of(
    st.tuples(st.just("file"), contents, st.booleans()),
    st.tuples(
        st.just("link"),
        st.sampled_from([b"a.txt", b"../outside", b"/etc/hostname"]),
        st.just(False),
    ),
)


def consistent(tree: dict[str, Entry]) -> bool:
    """No path is both a file and a directory."""
    return not any(other.startswith(name + "/") for name in tree for other in tree)


trees = st.dictionaries(st.sampled_from(NAMES), entries, max_size=len(NAMES)).filter(consistent)


# ---------------------------------------------------------------------------- the agent's edits

TARGETS = tuple(name for name in FILES if name != ".gitignore")
"""What the agent edits: `.gitignore` stays, so that the tree's ignored paths stay known."""
NEW = ("src/new.c", "fresh/tree/file.txt", "docs/c.md", "notes.log")
AFTER = (
    "content_keep_stat",
    "truncate_keep_stat",
    "swap_outside",
    "swap_twin",
    "hardlink_twin",
    "rewrite_same",
    "touch",
    "chmod",
    "chmod_keep_mtime",
    "delete",
    "to_link",
    "to_fifo",
    "append",
    "create",
    "refused_name",
    "nested_repo",
)
"""The edits `edit` plays, stat tricks included."""
BEFORE = ("content_keep_stat", "touch", "rewrite_same", "swap_outside", "append")
"""The edits played in the second a baseline is recorded."""
edits = st.lists(
    st.tuples(st.sampled_from(AFTER), st.sampled_from(TARGETS + NEW), st.binary(max_size=24)),
    max_size=6,
)
early = st.lists(
    st.tuples(st.sampled_from(BEFORE), st.sampled_from(TARGETS), st.binary(max_size=8)),
    max_size=3,
)


def every_file(source: Path) -> list[Path]:
    """Every file of the tree, its `.git` left out."""
    found: list[Path] = []
    for parent, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d != ".git"]
        found += [Path(parent, name) for name in files]
    return found


def chmod_all(source: Path) -> None:
    """`chmod -R u+w`: every file's ctime moves, its bytes, size and mtime stay (a symlink's
    mode cannot change: it is left alone, as `chmod -R` does)."""
    for path in every_file(source):
        if not path.is_symlink():
            path.chmod(os.lstat(path).st_mode & 0o7777 | 0o200)
