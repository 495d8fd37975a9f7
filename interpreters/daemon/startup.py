"""Starting the daemon: check the input, record the baseline, bind the listeners, serve.

Interpreter layer, loaded only by `ssegrade daemon`. The order matters (SPEC §9): everything
that can be refused is checked first (difficulty level, task, source tree, runner, results
folder, admin socket folder), then the baseline is recorded, and only then does any listener
bind. The daemon's private state (the baseline unless `--baseline` keeps it, the pristine
grading repo when none is given, the sessions' scratch folders) lives in a temporary folder
removed at exit.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from returns.result import Failure

from interpreters.daemon.backend import LocalBackend
from interpreters.daemon.console import say, version
from interpreters.daemon.server import (
    Listening,
    SocketError,
    bind_tcp,
    bind_unix,
    check_admin_folder,
    remove_socket,
    serve,
)
from interpreters.daemon.service import Service
from interpreters.daemon.shell import AgentShell
from interpreters.grading import keep_repo_copy
from interpreters.real import files, git
from interpreters.real.local import Places
from interpreters.real.runner import ContainmentRefused, choose, release_scratch, scratch_folder
from interpreters.real.support import find_support_folders
from interpreters.setup import (
    BadInput,
    ScriptOptions,
    grading_repo,
    load_inputs,
    lock_task,
    make_results,
)
from ssegrade.difficulty import parse_difficulty

__all__ = ["Settings", "run_daemon"]


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
    scripts: ScriptOptions = field(default_factory=ScriptOptions)


def _baseline(source: Path, given: Path | None, state: Path, *, keep_copy: bool) -> git.Baseline:
    if given is not None and given.is_dir() and any(given.iterdir()):
        loaded = git.load_baseline(given)
        if isinstance(loaded, Failure):
            raise BadInput(loaded.failure().message)
        say(f"baseline loaded from {given} (recorded by an earlier start)")
        return loaded.unwrap()
    into = given if given is not None else state / "baseline"
    recorded = git.record_baseline(source, into)
    if isinstance(recorded, Failure):
        raise BadInput(recorded.failure().message)
    base = recorded.unwrap()
    if keep_copy:  # no grading repo is named: the whole tree as it is now serves as one
        try:
            keep_repo_copy(source, base.path)
        except OSError as exc:
            raise BadInput(f"cannot copy {source} as the grading repo: {exc.strerror}") from exc
    say(f"baseline recorded: commit {base.commit}")
    return base


def _listeners(agent: Path, admin: Path, port: int | None) -> list[Listening]:
    bound: list[Listening] = []
    try:
        bound.append(bind_unix(admin, 0o600, "admin"))
        bound.append(bind_unix(agent, 0o666, "agent"))
        if port is not None:
            bound.append(bind_tcp(port))
    except SocketError as exc:
        for item in bound:
            item.sock.close()
            remove_socket(item.path)
        raise BadInput(str(exc)) from exc
    return bound


def run_daemon(settings: Settings) -> None:
    """Check the input, record the baseline, then serve until SIGTERM or SIGINT.

    Bad input raises `BadInput` (one line, exit 2) before anything is recorded or bound.
    """
    level = parse_difficulty(os.environ.get("SSE_DIFFICULTY"))
    if isinstance(level, Failure):
        raise BadInput(level.failure())
    inputs = load_inputs(settings.task_dir, settings.source, settings.runner_user)
    task, task_dir, source, who = inputs.task, inputs.task_dir, inputs.source, inputs.runner
    if source is None:
        raise BadInput("the daemon needs the agent's source tree: give --source")
    agent_socket = settings.agent_socket.absolute()
    admin_socket = settings.admin_socket.absolute()
    if agent_socket == admin_socket:
        raise BadInput("the agent-facing and admin sockets must be different paths")
    scripts = settings.scripts
    try:
        contained = choose(scripts.containment)
    except ContainmentRefused as exc:
        raise BadInput(str(exc)) from None
    results = make_results(settings.results, share=True)
    try:
        check_admin_folder(admin_socket)
    except SocketError as exc:
        raise BadInput(str(exc)) from exc
    state = scratch_folder("daemon")  # its guardian removes it, and what runs, on a kill
    try:
        state.chmod(0o711)  # the runner must reach its scratch folder below, and nothing else
        keep_copy = settings.repo is None and not Path("/ssebench-repo").is_dir()
        base = _baseline(source, settings.baseline_dir, state, keep_copy=keep_copy)
        repo = grading_repo(settings.repo, base, state, say)
        places = Places(
            task_dir,
            source,
            base,
            repo,
            results,
            state / "scratch",
            find_support_folders(task, task_dir),
        )
        locked = lock_task(inputs)  # before any listener: no script runs before this
        if locked:
            say(f"made {len(locked)} paths of the task's hidden material readable by root only")
        reference = task_dir / task.files.patch if task.files.patch else None
        hidden = (str(admin_socket.parent),)
        service = Service(
            task=task,
            folder=str(task_dir),
            level=level.unwrap(),
            backend=LocalBackend(
                places,
                who,
                reference=reference,
                say=say,
                env=replace(scripts.env, hidden=hidden),
                memory=scripts.memory,
                containment=scripts.containment,
                agent_shell=AgentShell(
                    source, settings.agent_user, (*hidden, str(results), str(base.path))
                ),
                archive=settings.archive,
            ),
            version=version(),
            source=str(source),
            script_timeout=settings.script_timeout,
            say=say,
        )
        listening = _listeners(agent_socket, admin_socket, settings.http_port)
        if who.note:
            say(who.note)
        say(contained.describe().replace("containment: ", "scripts: containment ", 1))
        say(f"task {task.id}, difficulty level {service.level.number} ({service.level.name})")
        serve(service, listening, say)
    finally:
        files.remove_tree(state)
        release_scratch(state)
    say("stopped")
