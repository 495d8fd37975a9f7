"""Starting the daemon: check the input, set the grading up, bind the listeners, serve.

Interpreter layer, loaded only by `ssegrade daemon`. The order matters (SPEC §9): everything
that can be refused is checked first (difficulty level, task, source tree, runner, results
folder, admin socket folder), then the grading is set up as every grading is
(`interpreters.app.setup.grading_setup`: the hidden material locked, the baseline recorded before
the agent runs, the grading repo), and only then does any agent-facing listener bind. The admin
socket, bound first thing (`binding.bind_early`), answers `GET /version` meanwhile and holds the
rest for the server (`interpreters.daemon.starting`); the agent-facing listeners answer the same
way from the moment they are bound (`binding.answer_early`), and only then do the server and
the service load (`interpreters.daemon.serving`): nothing competes with the set-up for this
process (its Python waits on git's), and nothing that only serving needs is imported before
the agent's socket exists. The daemon's private state (the baseline unless `--baseline` keeps
it, the pristine grading repo when none is given, the sessions' scratch folders) lives in the
set-up's scratch folder, removed at exit.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pwd
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
    answer_early,
    bind_tcp,
    bind_unix,
    check_admin_folder,
    remove_socket,
    stop_early_answers,
)
from interpreters.daemon.settings import Settings
from interpreters.real.runner import ContainmentRefused, Runner, choose
from ssegrade.protocol import Level, parse_difficulty

__all__ = ["Settings", "run_daemon"]

_log = logging.getLogger(__name__)


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


def _set_up_and_serve(
    settings: Settings,
    inputs: Inputs,
    level: Level,
    results: Path,
    admin: Listening,
    contained: str,
) -> None:
    """Record the baseline, then bind the agent-facing listeners, answer on them at once, and
    serve: the agent's socket exists only once its tree cannot change the baseline (SPEC §9)."""
    where = Sources(repo=settings.repo, baseline=settings.baseline_dir)
    with grading_setup(inputs, where, results, before_agent=True, kind="daemon") as ready:
        assert ready.places.baseline is not None  # recorded before the agent runs
        listening = _listeners(admin, settings.agent_socket.absolute(), settings.http_port)
        try:
            for item in listening[1:]:
                answer_early(item)
            # Loaded only now: the server's libraries, and what only serving needs.
            from interpreters.daemon.serving import serve_task  # noqa: PLC0415

            serve_task(settings, inputs, level, ready.places, listening, contained)
        finally:
            stop_early_answers()
            for item in listening[1:]:
                item.sock.close()
                remove_socket(item.path)
