"""Starting the daemon: check the input, set the grading up, bind the listeners, serve.

Interpreter layer, loaded only by `ssegrade daemon`. The order matters (SPEC §9): everything
that can be refused is checked first (difficulty level, task, source tree, runner, results
folder, admin socket folder), then the grading is set up as every grading is
(`interpreters.app.setup.grading_setup`: the hidden material locked, the baseline recorded before
the agent runs, the grading repo), and only then does any agent-facing listener bind. The admin
socket, bound first thing (`binding.bind_early`), answers `GET /version` meanwhile and holds the
rest for the server (`interpreters.daemon.starting`), until the server takes it. The daemon's
private state (the baseline unless `--baseline` keeps it, the pristine grading repo when none is
given, the sessions' scratch folders) lives in the set-up's scratch folder, removed at exit.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import pwd
import threading
from dataclasses import dataclass, field, replace
from pathlib import Path

from returns.result import Failure

from interpreters.app.setup import (
    InputError,
    Inputs,
    Sources,
    grading_setup,
    load_inputs,
    make_results,
)
from interpreters.daemon.binding import (
    Listening,
    SocketError,
    adopt_early,
    bind_tcp,
    bind_unix,
    check_admin_folder,
    remove_socket,
    stop_early_answers,
)
from interpreters.daemon.console import version
from interpreters.daemon.reads import DaemonReads
from interpreters.daemon.service import Service
from interpreters.daemon.sessions import LocalSessions
from interpreters.daemon.shell import AgentShell
from interpreters.daemon.workers import DEFAULT_WORKERS
from interpreters.real.runner import ContainmentRefused, Runner, choose
from interpreters.real.runner.options import ScriptOptions
from ssegrade.protocol import Level, parse_difficulty

__all__ = ["Settings", "run_daemon"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Settings:
    """The daemon's options, as the command line and the environment gave them."""

    task_dir: Path
    source: Path | None
    repo: Path | None
    results: Path
    agent_socket: Path
    admin_socket: Path
    http_port: int | None
    baseline_dir: Path | None
    script_timeout: float
    runner_user: str | None
    agent_user: str = "model"
    archive: Path | None = None
    workers: int = DEFAULT_WORKERS
    scripts: ScriptOptions = field(default_factory=ScriptOptions)


def _admin_listener(admin: Path) -> Listening:
    """The admin socket: the one `bind_early` bound at the start, or bound now."""
    early = adopt_early(admin)
    if early is not None:
        return early
    try:
        return bind_unix(admin, 0o600, "admin")
    except SocketError as exc:
        raise InputError(str(exc)) from exc


def _listeners(admin: Listening, agent: Path, port: int | None) -> list[Listening]:
    """The admin listener and the agent-facing ones, bound now (the baseline is recorded)."""
    bound: list[Listening] = [admin]
    try:
        bound.append(bind_unix(agent, 0o666, "agent"))
        if port is not None:
            bound.append(bind_tcp(port))
    except SocketError as exc:
        for item in bound:
            item.sock.close()
            remove_socket(item.path)
        raise InputError(str(exc)) from exc
    return bound


def _dedicated(agent_user: str, runner: Runner) -> None:
    """Refuse, as root, an agent account that is the runner's or in its group: the agent phase
    ends by killing every process of the agent's account, which must be nobody else's, and
    the runner's group reaches the sessions' folder."""
    if os.geteuid() != 0 or not runner.isolated:
        return
    with contextlib.suppress(KeyError):
        entry = pwd.getpwnam(agent_user)
        if runner.uid == entry.pw_uid or runner.gid == entry.pw_gid:
            raise InputError(
                f"the agent's account {agent_user!r} is the runner's or in its group: give "
                "the bash tool an account of its own (--agent-user)"
            )


def run_daemon(settings: Settings) -> None:
    """Check the input, bind the admin socket (or take the one bound at the start), set the
    grading up (`grading_setup`: the baseline recorded now, the grading repo, the locks), bind
    the agent-facing listeners, then serve until SIGTERM or SIGINT.

    Bad input raises `InputError` (one line, exit 2) before anything is recorded and before
    the agent-facing socket exists; the admin socket is then removed.
    """
    level = parse_difficulty(os.environ.get("SSE_DIFFICULTY"))
    if isinstance(level, Failure):
        raise InputError(level.failure())
    inputs = load_inputs(settings.task_dir, settings.source, settings.runner_user)
    source = inputs.source
    if source is None:
        raise InputError("the daemon needs the agent's source tree: give --source")
    agent_socket = settings.agent_socket.absolute()
    admin_socket = settings.admin_socket.absolute()
    if agent_socket == admin_socket:
        raise InputError("the agent-facing and admin sockets must be different paths")
    _dedicated(settings.agent_user, inputs.runner)
    scripts = settings.scripts
    try:
        described = choose(scripts.containment).describe()
    except ContainmentRefused as exc:
        raise InputError(str(exc)) from None
    results = make_results(settings.results, share=True)
    try:
        check_admin_folder(admin_socket)
    except SocketError as exc:
        raise InputError(str(exc)) from exc
    admin = _admin_listener(admin_socket)
    try:
        _set_up_and_serve(settings, inputs, level.unwrap(), results, admin, described)
    finally:
        stop_early_answers()
        admin.sock.close()
        remove_socket(admin.path)
    _log.info("stopped")


def _load_server() -> None:
    """Import the server and its libraries (FastAPI, uvicorn); a failure is met again, and
    said, where the server is imported for good."""
    with contextlib.suppress(Exception):
        importlib.import_module("interpreters.daemon.server")


def _set_up_and_serve(
    settings: Settings,
    inputs: Inputs,
    level: Level,
    results: Path,
    admin: Listening,
    contained: str,
) -> None:
    """Record the baseline, then bind the agent-facing listeners and serve: the agent's
    socket exists only once its tree cannot change the baseline (SPEC §9)."""
    source = inputs.source
    assert source is not None  # checked by the caller
    scripts = settings.scripts
    admin_socket = settings.admin_socket.absolute()
    where = Sources(repo=settings.repo, baseline=settings.baseline_dir)
    # The server's libraries load while the baseline is recorded (git's work, mostly in other
    # processes), so that the agent-facing socket answers as soon as it exists.
    threading.Thread(target=_load_server, name="load-server", daemon=True).start()
    with grading_setup(inputs, where, results, before_agent=True, kind="daemon") as ready:
        places, base = ready.places, ready.places.baseline
        assert base is not None  # recorded before the agent runs
        listening = _listeners(admin, settings.agent_socket.absolute(), settings.http_port)
        hidden = (str(admin_socket.parent),)
        service = Service(
            task=inputs.task,
            folder=str(inputs.task_dir),
            level=level,
            sessions=LocalSessions(
                places,
                inputs.runner,
                env=replace(scripts.env, hidden=hidden),
                memory=scripts.memory,
                containment=scripts.containment,
            ),
            reads=DaemonReads(source, base, results, settings.archive),
            version=version(),
            shell=AgentShell(
                source,
                settings.agent_user,
                replace(scripts.env, hidden=(*hidden, str(results), str(base.path))),
            ),
            source=str(source),
            script_timeout=settings.script_timeout,
        )
        _log.info(contained.replace("containment: ", "scripts: containment ", 1))
        _log.info("task %s, difficulty level %d (%s)", inputs.task.id, level.number, level.name)
        from interpreters.daemon.server import serve  # noqa: PLC0415 - see _load_server

        stop_early_answers()  # the server answers from now on
        serve(service, listening, workers=settings.workers)
