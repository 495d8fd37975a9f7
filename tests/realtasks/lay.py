"""Lay out the real-shaped tasks of `tests/realtasks/` and grade patches on them for real.

Each task is laid out in its own folder: the task, the project as a git tree (with what a task
image keeps beside it: `vendor/`, ignored by git), its baseline, and the environment a task
image sets for its toolchain (`env`), with `PATH` naming only folders the runner account can
reach. A toolchain that is not installed where the runner can run it leaves `toolchain_path`
None: the tests skip.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import stat
import subprocess
import zipfile
from dataclasses import dataclass
from pathlib import Path

from tests.support.realtask import git, ssegrade

HERE = Path(__file__).resolve().parent

_SYSTEM_PATH = ("/usr/local/bin", "/usr/bin", "/bin")


def _open_to_all(folder: Path) -> bool:
    """Whether every folder from the root down to `folder` lets anyone through."""
    try:
        chain = [folder, *folder.parents]
        return all(p.stat().st_mode & stat.S_IXOTH for p in chain)
    except OSError:
        return False


def toolchain_path(*tools: str) -> str | None:
    """A `PATH` where the runner account finds each of `tools`, or None when one is not
    installed where anyone can run it (rustup's `~/.cargo/bin` of root is not)."""
    folders = [*os.environ.get("PATH", "").split(os.pathsep), *_SYSTEM_PATH]
    found: list[str] = []
    for tool in tools:
        where = next(
            (
                folder
                for folder in folders
                if folder.startswith("/")
                and os.access(Path(folder, tool), os.X_OK)
                and _open_to_all(Path(folder))
            ),
            None,
        )
        if where is None:
            return None
        found.append(where)
    return os.pathsep.join(dict.fromkeys([*found, *_SYSTEM_PATH]))


@dataclass(frozen=True)
class Laid:
    """A task laid out: its folders, the environment its image sets, the reference fix."""

    root: Path
    task: Path
    source: Path
    baseline: Path
    fix: Path
    env: dict[str, str]


def _run(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"{argv}: {done.stdout}{done.stderr}"


def _proxy(root: Path, module: str, version: str, folder: Path) -> Path:
    """A Go module proxy in files (`GOPROXY=file://…`) serving `folder` as `module@version`."""
    at = root / module / "@v"
    at.mkdir(parents=True)
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in sorted(folder.rglob("*")):
            if path.is_file():
                archive.write(path, f"{module}@{version}/{path.relative_to(folder).as_posix()}")
    (at / f"{version}.zip").write_bytes(data.getvalue())
    (at / f"{version}.mod").write_bytes((folder / "go.mod").read_bytes())
    (at / f"{version}.info").write_text(
        json.dumps({"Version": version, "Time": "2026-01-01T00:00:00Z"})
    )
    (at / "list").write_text(f"{version}\n")
    return root


def _commit(source: Path, baseline: Path) -> None:
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "Initial commit")
    done = ssegrade("baseline", "--source", str(source), "--into", str(baseline))
    assert done.returncode == 0, done.stderr


def _folders(work: Path, name: str) -> tuple[Path, Path, Path]:
    root = work / name
    root.mkdir()
    task, source = root / "task", root / "project"
    shutil.copytree(HERE / name / "task", task)
    shutil.copytree(HERE / name / "project", source)
    return root, task, source


def lay_out_go(work: Path, path: str) -> Laid:
    """The Go task `gorow` in `work` (a folder the runner can enter), the toolchain on `path`:
    `GOPATH` made writable by all as the golang image has it, its module cache filled from a
    file proxy, the project's modules vendored, the PoC module's `go.sum` written."""
    root, task, source = _folders(work, "gorow")
    gopath = root / "go"
    gopath.mkdir(mode=0o777)
    gopath.chmod(0o1777)
    deps = HERE / "gorow" / "deps" / "textsplit"
    proxy = _proxy(root / "proxy", "example.invalid/textsplit", "v1.0.0", deps)
    fetch = {
        "PATH": path,
        "HOME": str(root),
        "GOPATH": str(gopath),
        "GOCACHE": str(root / "gocache"),
        "GOPROXY": proxy.as_uri(),
        "GOSUMDB": "off",
        "GOFLAGS": "-mod=mod",
    }
    _run(["go", "mod", "tidy"], source, fetch)
    _run(["go", "mod", "vendor"], source, fetch)
    shutil.copyfile(source / "go.sum", task / "pocs" / "go.sum")
    shutil.rmtree(root / "gocache")
    _commit(source, root / "baseline")
    env = {
        "PATH": path,
        "GOPATH": str(gopath),
        "GOFLAGS": "-mod=vendor",
        "GOPROXY": "off",
        "GOSUMDB": "off",
    }
    return Laid(root, task, source, root / "baseline", task / "diffs/patch.diff", env)


def lay_out_rust(work: Path, path: str) -> Laid:
    """The Rust task `rsrow` in `work` (a folder the runner can enter), the toolchain on
    `path`: `CARGO_HOME` writable by all as the rust image has it, offline, no registry."""
    root, task, source = _folders(work, "rsrow")
    home = root / "cargo"
    home.mkdir()
    home.chmod(0o1777)
    env = {
        "PATH": path,
        "CARGO_HOME": str(home),
        "CARGO_NET_OFFLINE": "true",
        "RUST_BACKTRACE": "0",
    }
    _run(["cargo", "generate-lockfile", "--offline"], source, {**env, "HOME": str(root)})
    _commit(source, root / "baseline")
    return Laid(root, task, source, root / "baseline", task / "diffs/patch.diff", env)


def apply(laid: Laid, patch: bytes) -> None:
    """Apply `patch` to the laid-out project's tree, as an agent's edits."""
    done = subprocess.run(
        ["git", "-C", str(laid.source), "apply", "-"],
        input=patch,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")


@dataclass(frozen=True)
class Graded:
    """What a whole grading wrote."""

    result: dict[str, object]
    guard: dict[str, object]
    reruns: list[dict[str, object]]

    @property
    def status(self) -> object:
        """The verdict."""
        return self.result["patch_result"]["status"]  # type: ignore[index]

    def flags(self, kind: str, confidence: str | None = None) -> list[dict[str, object]]:
        """The guard's flags of `kind` (and `confidence`, when given)."""
        return [
            f
            for f in self.guard["flags"]  # type: ignore[attr-defined]
            if f["kind"] == kind and confidence in (None, f["confidence"])
        ]


def grade(laid: Laid, results: Path, timeout: float = 600) -> Graded:
    """Grade the project's tree as it is now with `ssegrade evaluate`, in the task image's
    environment."""
    done = ssegrade(
        "evaluate",
        "--task",
        str(laid.task),
        "--source",
        str(laid.source),
        "--baseline",
        str(laid.baseline),
        "--results",
        str(results),
        env=laid.env,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads((results / "result.json").read_bytes())
    guard = json.loads((results / "guard.json").read_bytes())
    lines = [json.loads(line) for line in (results / "checks.jsonl").read_bytes().splitlines()]
    return Graded(result, guard, [r for r in lines if r["name"] == "guard" and r["poc"]])
