"""The ssegrade bundle: a read-only folder that runs ssegrade in an image without Python.

Interpreter layer. A container engine mounts the folder at one path (`/opt/ssegrade`, say)
into a task image and runs its `ssegrade` wrapper there. The folder holds:

- `bin/pythonX.Y`: the running interpreter's own binary, its run path set to `$ORIGIN/../lib`
  (patchelf), so that it finds `lib/libpythonX.Y.so` wherever the folder is mounted;
- `lib/pythonX.Y`: the standard library (no tests, IDLE, Tk or ensurepip), its extension
  modules' shared libraries beside `libpython` (glibc's excepted, which every image has), and
  in its own `site-packages` ssegrade and its dependencies (the `all` extra, pinned to the
  versions of the running environment);
- `ssegrade`: `pythonX.Y -I`, isolated from every `PYTHON*` variable and user site.

Nothing of the bundle reaches the environment the task's scripts see: no `LD_LIBRARY_PATH`,
no `PYTHONPATH` (the run path and the interpreter's own prefix do it). The packages sit in the
interpreter's site-packages, not on a path added at run time, because ssegrade starts its
helpers with `sys.executable`.

A bundle is built once per host and version: its folder's name carries a digest of the
interpreter, ssegrade's code and the pinned dependencies, and builders of the same bundle
(parallel test workers) wait on one lock while the first builds it.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from interpreters.real.programs import ProgramError, program
from ssegrade.internal.errors import SsegradeError

__all__ = ["BundleError", "build", "bundle_name", "requirements"]

EXTRAS = ("cli", "daemon", "report", "guard")
"""The extras a bundle installs: every command but the Ray engine's, and the guard's parsers
(without them a container's guard would read code line by line, not as the host's does)."""

_PACKAGES = ("ssegrade", "interpreters")
_LEFT_OUT = (
    "test",
    "idlelib",
    "tkinter",
    "turtledemo",
    "ensurepip",
    "site-packages",
    "config-*",
    "_tkinter*",
)
_GLIBC = re.compile(r"^(ld-linux.*|lib(c|m|dl|rt|pthread|util|resolv|anl|nsl)\.so\.\d+)$")
_NEEDS = re.compile(r"^\s*(\S+) => (/\S+) \(0x[0-9a-f]+\)$")
WRAPPER = """#!/bin/sh
# ssegrade from its bundle, isolated (-I): neither the working folder (the agent's tree, maybe)
# nor a PYTHON* variable nor a user site can put a module before ssegrade's own.
# Found through links to it too (readlink, coreutils).
here="$(dirname -- "$(readlink -f -- "$0")")"
exec "$here/bin/{python}" -I -c 'from interpreters.cli.entry import main; main()' "$@"
"""


class BundleError(SsegradeError):
    """The bundle cannot be built here (a missing tool, a failed install): one line."""


def requirements(extras: tuple[str, ...] = EXTRAS) -> list[str]:
    """ssegrade's requirements with `extras`, markers dropped, itself left out.

    >>> any(r.startswith("click") for r in requirements()), "ssegrade" in requirements()
    (True, False)
    """
    wanted = []
    for line in importlib.metadata.requires("ssegrade") or []:
        requirement, _, marker = line.partition(";")
        extra = re.search(r"""extra\s*==\s*['"]([^'"]+)['"]""", marker)
        if marker.strip() and (extra is None or extra.group(1) not in extras):
            continue
        if re.match(r"ssegrade\b", requirement.strip()):
            continue
        wanted.append(requirement.strip())
    return wanted


def _site() -> list[str]:
    """The running environment's own site-packages folders."""
    paths = sysconfig.get_paths()
    return list(dict.fromkeys([paths["purelib"], paths["platlib"]]))


def _ssegrade() -> importlib.metadata.Distribution:
    """ssegrade's distribution in the running environment (its version, its metadata)."""
    found = list(importlib.metadata.distributions(name="ssegrade", path=_site()))
    return found[0] if found else importlib.metadata.distribution("ssegrade")


def _pins() -> str:
    """Every distribution of the running environment, pinned: the bundle's versions. Read from
    the environment's own site-packages, not from `sys.path`: a `PYTHONPATH` or a folder a
    process put on its path would change the bundle's name (and make another bundle) without
    changing what the bundle holds."""
    names = {}
    for distribution in importlib.metadata.distributions(path=_site()):
        name = distribution.metadata["Name"]
        if name and name.lower() != "ssegrade":
            names[name.lower()] = f"{name}=={distribution.version}"
    return "".join(f"{names[key]}\n" for key in sorted(names))


def _package_files() -> Iterator[tuple[str, Path]]:
    """ssegrade's own files (name relative to site-packages, path), sorted."""
    for package in _PACKAGES:
        top = Path(importlib.import_module(package).__file__ or "").parent
        for path in sorted(top.rglob("*")):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                yield f"{package}/{path.relative_to(top).as_posix()}", path


def bundle_name() -> str:
    """The folder name of this host's bundle of this ssegrade: its version and a digest of the
    interpreter, ssegrade's files and the pinned dependencies."""
    digest = hashlib.sha256()
    digest.update(f"{sys.version}\n{sysconfig.get_platform()}\n{sys.base_prefix}\n".encode())
    digest.update(_pins().encode())
    for name, path in _package_files():
        digest.update(f"{name}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    version = _ssegrade().version
    return (
        f"ssegrade-{version}-py{sys.version_info[0]}{sys.version_info[1]}-{digest.hexdigest()[:12]}"
    )


def build(into: Path) -> Path:
    """The bundle under the folder `into` (made if missing), built unless there already: its
    path, `into/<bundle_name()>`. `BundleError` when it cannot be built."""
    into.mkdir(parents=True, exist_ok=True)
    final = into / bundle_name()
    with _locked(into / ".lock"):
        if (final / "ssegrade").is_file():
            return final
        work = Path(tempfile.mkdtemp(prefix=".building-", dir=into))
        try:
            _assemble(work)
            _read_only(work)
            work.chmod(0o555)
            os.rename(work, final)
        except BaseException:
            _remove(work)
            raise
    return final


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (made if missing, never followed if a link)."""
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)


def _assemble(root: Path) -> None:
    """Fill `root` with the interpreter, its libraries, ssegrade and the wrapper."""
    try:
        patchelf = program("patchelf")
    except ProgramError as exc:
        raise BundleError(f"patchelf is needed to build the bundle: {exc}") from exc
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    python = f"python{version}"
    prefix = Path(sys.base_prefix)
    binary = (prefix / "bin" / python).resolve()
    stdlib = Path(sysconfig.get_paths(vars={"installed_base": sys.base_prefix})["stdlib"])
    (root / "bin").mkdir()
    shutil.copy2(binary, root / "bin" / python)
    (root / "bin" / "python3").symlink_to(python)
    _run([patchelf, "--set-rpath", "$ORIGIN/../lib", str(root / "bin" / python)])
    lib = _mkdir(root / "lib")
    shared = sysconfig.get_config_var("INSTSONAME")
    libdir = sysconfig.get_config_var("LIBDIR")
    if sysconfig.get_config_var("Py_ENABLE_SHARED") and shared and libdir:
        shutil.copy2(Path(libdir) / shared, lib / shared)
    target = lib / python
    shutil.copytree(stdlib, target, symlinks=True, ignore=shutil.ignore_patterns(*_LEFT_OUT))
    _carry_libraries(patchelf, lib, target / "lib-dynload")
    site = _mkdir(target / "site-packages")
    _install_dependencies(site)
    _install_ssegrade(site)
    _run([str(root / "bin" / python), "-I", "-m", "compileall", "-q", *map(str, _own(site))])
    (root / "ssegrade").write_text(WRAPPER.format(python=python))
    (root / "ssegrade").chmod(0o755)


def _mkdir(path: Path) -> Path:
    path.mkdir(exist_ok=True)
    return path


def _own(site: Path) -> list[Path]:
    return [site / package for package in _PACKAGES]


def _carry_libraries(patchelf: str, lib: Path, modules: Path) -> None:
    """Copy the shared libraries the extension modules in `modules` need, glibc's excepted,
    into `lib`, and point the modules' and the libraries' run paths there."""
    for module in sorted(modules.glob("*.so")):
        listed = subprocess.run(
            [program("ldd"), str(module)], capture_output=True, text=True, check=False
        )
        carried = False
        for line in listed.stdout.splitlines():
            found = _NEEDS.match(line)
            if found is None or _GLIBC.match(found.group(1)) or "libpython" in found.group(1):
                continue
            copy = lib / found.group(1)
            if not copy.exists():
                shutil.copy2(Path(found.group(2)).resolve(), copy)
                copy.chmod(0o755)
                _run([patchelf, "--set-rpath", "$ORIGIN", str(copy)])
            carried = True
        if carried:
            _run([patchelf, "--set-rpath", "$ORIGIN/../..", str(module)])


def _install_dependencies(site: Path) -> None:
    """pip-install ssegrade's requirements into `site`, at the running environment's versions."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt") as pins:
        pins.write(_pins())
        pins.flush()
        pip = [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
        where = ["--no-warn-script-location", "--target", str(site), "--constraint", pins.name]
        _run([*pip, *where, *requirements()])
    shutil.rmtree(site / "bin", ignore_errors=True)  # console scripts of the host's paths


def _install_ssegrade(site: Path) -> None:
    """Copy ssegrade's packages into `site`, with the metadata `--version` reads."""
    distribution = _ssegrade()
    info = site / f"ssegrade-{distribution.version}.dist-info"
    info.mkdir()
    metadata = distribution.metadata
    fields = ("Name", "Version", "Summary", "License-Expression")
    lines = [f"{field}: {metadata[field]}\n" for field in fields if metadata[field]]
    (info / "METADATA").write_text("Metadata-Version: 2.1\n" + "".join(lines))
    (info / "INSTALLER").write_text("ssegrade-bundle\n")
    records = []
    for name, path in _package_files():
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, site / name)
        records.append(f"{name},,")
    records += [f"{info.name}/{entry},," for entry in ("METADATA", "INSTALLER", "RECORD")]
    (info / "RECORD").write_text("\n".join(records) + "\n")


def _read_only(root: Path) -> None:
    """Take every write permission away under `root` (links left alone)."""
    for folder, names, files in os.walk(root):
        for name in files:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(path.stat().st_mode & 0o555)
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(0o555)


def _remove(root: Path) -> None:
    """Remove a half-built bundle, write permissions given back first."""
    for folder, names, _files in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink():
                path.chmod(0o755)
    root.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


def _run(argv: list[str]) -> None:
    """Run one build step; `BundleError` with its last line of output when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip() or done.stdout.strip() or "no output").splitlines()[-1]
        raise BundleError(f"{Path(argv[0]).name} {' '.join(argv[1:3])} failed: {last}")
