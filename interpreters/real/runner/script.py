"""One script run: its environment and containment, its process (`launch.py`), its log and
its answer.

Interpreter layer (processes, files). Task scripts (build, tests, PoC runner) run the agent's
code, so they are hostile: each runs as the runner account (as root), in a session of its own,
stdin `/dev/null`, with the environment of `environment.py`, contained as `containment.py`
says; after it, whatever its outcome, nothing it started is left running, and no process
outside its containment is ever signalled.
"""

from __future__ import annotations

import os
import secrets
import shlex
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from interpreters.real.runner.account import Runner, who
from interpreters.real.runner.containment import Confinement
from interpreters.real.runner.environment import EnvPolicy, left_out, script_environment
from interpreters.real.runner.launch import ScriptRun
from interpreters.real.runner.output import (
    KEPT_HEAD,
    KEPT_TAIL,
    LOG_HEAD,
    LOG_TAIL,
    LogWriteError,
    bounded,
    ends_with_newline,
    write_log,
)
from interpreters.real.runner.policy import (
    DEFAULT_PIDS,
    ContainmentPolicy,
    ContainmentRefused,
    Mechanisms,
)
from interpreters.real.runner.probe import choose
from interpreters.real.runner.processes import ensure_subreaper
from ssegrade.internal.effects import ScriptResult

__all__ = ["run_script"]

_DEFAULT_SESSION = secrets.token_hex(8)


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
    spool: Path | None = None,
    env: EnvPolicy | None = None,
    keep: Sequence[Path] = (),
    memory: int | None = None,
    pids: int = DEFAULT_PIDS,
    containment: ContainmentPolicy | None = None,
    view: Callable[[], None] | None = None,
    workspace: str | None = None,
) -> ScriptResult:
    """Run `argv` in `cwd` as `runner`, killed after `limit` seconds; clean up; log it.

    The environment follows `env` (default `EnvPolicy()`), with `HOME`/`TMPDIR` = `home` (made
    if missing, owned by the runner) and `PATH` = `path` when given. Output is spooled in
    `spool` (default: the system's temporary folder), never next to the log. Contained as
    `containment` asks (default: `full` as root, else `weak`; see `probe.choose`); `keep`
    names the support folders, which it may change for itself alone (in `full` containment, a
    copy-on-write layer of the run's own), besides `cwd` and `home` (writable) and the folders
    of its absolute arguments (read-only); `memory` (bytes) and `pids` limit its cgroup. `view`
    mounts `cwd` (a copy-on-write view) in the script's own mount namespace, which `full`
    containment alone gives; `workspace` says in the log what `cwd` is.

    The answer keeps the head and tail of stdout and of stderr; the log at `log_path` has the
    command, the containment, the network, the environment's names (given and left out), exit
    code, duration, whether it was killed, and each stream bounded. A script killed by its
    limit answers code -1, `killed`, and a last stderr line saying so; one that cannot start,
    or cannot be contained as asked, answers code -1 with the reason on stderr and in
    `not_started` (one with a `#!` line but no exec bit is run through its interpreter, with a
    warning in the log). A script killed by a signal answers 128 + its number, as shells do.
    Never raises for what the script does; raises `LogWriteError` (an `OSError`) when the log
    cannot be written, holding how the script ended.
    """
    ensure_subreaper()
    run_id = secrets.token_hex(8)
    policy = env or EnvPolicy()
    policy = EnvPolicy(policy.extra, policy.clean, (*policy.hidden, os.fspath(log_path.parent)))
    variables = script_environment(
        policy, home=home, session=session or _DEFAULT_SESSION, run=run_id, path=path
    )
    refused: str | None = None
    try:
        mechanisms = choose(containment or ContainmentPolicy())
    except ContainmentRefused as exc:
        mechanisms, refused = Mechanisms("weak", weaker="refused"), str(exc)
    if view is not None and refused is None and not mechanisms.namespaces:
        refused = "a copy-on-write view needs full containment (a mount namespace)"
    confinement = Confinement(
        mechanisms,
        runner,
        keep=[cwd, home],
        pids=pids,
        memory=memory,
        view=view,
        readable=_argument_folders(argv),
        toolchain=_environment_folders(variables),
        shared=keep,
        layers_in=spool,
    )
    with (
        tempfile.TemporaryFile(dir=spool) as out,
        tempfile.TemporaryFile(dir=spool) as err,
    ):
        run = ScriptRun(runner, list(argv), cwd, variables, confinement, out, err)
        start = time.monotonic()
        if refused is None:
            code, killed, start_error = run.run(home, limit)
        else:
            code, killed, start_error = -1, False, f"ssegrade: {refused}"
        seconds = time.monotonic() - start
        if start_error is not None:
            err.write(start_error.encode() + b"\n")
        if killed:
            ends_line = ends_with_newline(err)
            err.write((b"" if ends_line else b"\n") + _killed_line(limit).encode() + b"\n")
        left = left_out(policy)
        header = [
            f"label: {label}",
            f"command: {shlex.join(run.command)}",
            f"cwd: {cwd}",
            *([f"workspace: {workspace}"] if workspace else []),
            f"user: {who(runner)}",
            *(
                [f"containment: refused ({refused})"]
                if refused
                else [mechanisms.describe(), mechanisms.network_line()]
            ),
            f"environment: {' '.join(sorted(variables))}",
            f"environment left out: {' '.join(left) if left else 'nothing'}",
            f"time limit: {limit:g} s",
            f"exit code: {code}",
            f"duration: {seconds:.3f} s",
            f"killed: {f'yes, after {limit:g} s (time limit)' if killed else 'no'}",
            f"output: the log keeps the first {LOG_HEAD} and the last {LOG_TAIL} bytes of each "
            "stream",
            *confinement.notes,
            *run.notes,
        ]
        ended = ScriptResult(
            code=code,
            stdout=bounded(out, KEPT_HEAD, KEPT_TAIL).decode(errors="replace"),
            stderr=bounded(err, KEPT_HEAD, KEPT_TAIL).decode(errors="replace"),
            seconds=round(seconds, 3),
            killed=killed,
            not_started=None if start_error is None else start_error.removeprefix("ssegrade: "),
            containment=None if refused else mechanisms.mode,
        )
        try:
            log_file = write_log(log_path, header, out, err)
        except LogWriteError as exc:
            exc.result = ended  # how the script ended is known: the caller may keep it
            raise
        return replace(ended, log_file=log_file)


def _argument_folders(argv: Sequence[str]) -> list[Path]:
    """The folders of the absolute paths among `argv` (each its own: a folder they share may
    hold other gradings' scratch folders)."""
    return [Path(arg).parent for arg in argv if arg.startswith("/") and os.path.exists(arg)]


_SHELL_STATE = frozenset({"PWD", "OLDPWD"})
"""Variables a shell keeps about where it was: they name no folder a script needs."""


def _environment_folders(variables: dict[str, str]) -> dict[str, list[str]]:
    """Folders the environment names by absolute path (a toolchain's `KVC_HOME`, `GOPATH`,
    an entry of `PATH`), each with the names of the variables naming it."""
    found: dict[str, list[str]] = {}
    for name, value in variables.items():
        if name in _SHELL_STATE:
            continue
        for part in value.split(os.pathsep):
            if part.startswith("/") and os.path.isdir(part):
                names = found.setdefault(os.path.normpath(part), [])
                if name not in names:
                    names.append(name)
    return found


def _killed_line(limit: float) -> str:
    return f"ssegrade: killed after {limit:g} s (the script's time limit)"
