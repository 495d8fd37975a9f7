"""The daemon once its listeners are bound: the service over the grading set up, served.

Interpreter layer. `interpreters.daemon.startup` imports this module only once the baseline is
recorded and the agent-facing listeners are bound, so that neither the server's libraries
(FastAPI, uvicorn) nor the service's modules load while the baseline is recorded, or before the
agent's socket exists: every listener answers `GET /version` meanwhile and holds the rest
(`interpreters.daemon.binding.answer_early`), and the server takes the held requests when it
serves, under its own rules (the difficulty gate on the agent-facing ones).
"""

from __future__ import annotations

import logging
from dataclasses import replace

from interpreters.app.setup import Inputs
from interpreters.daemon.binding import Listening, stop_early_answers
from interpreters.daemon.console import version
from interpreters.daemon.reads import DaemonReads
from interpreters.daemon.server import serve
from interpreters.daemon.service import Service
from interpreters.daemon.sessions import LocalSessions
from interpreters.daemon.settings import Settings
from interpreters.daemon.shell import AgentShell
from interpreters.real.places import Places
from ssegrade.protocol import Level

__all__ = ["serve_task"]

_log = logging.getLogger(__name__)


def serve_task(
    settings: Settings,
    inputs: Inputs,
    level: Level,
    places: Places,
    listening: list[Listening],
    contained: str,
) -> None:
    """Build the daemon's `Service` over the grading `places` (their baseline recorded) and
    serve it on the bound `listening` until SIGTERM or SIGINT; the early answers stop as the
    server takes the sockets."""
    source, base = inputs.source, places.baseline
    assert source is not None  # checked before the set-up
    assert base is not None  # recorded by the set-up, before the agent runs
    scripts = settings.scripts
    hidden = (str(settings.admin_socket.absolute().parent),)
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
        reads=DaemonReads(source, base, places.results, settings.archive),
        version=version(),
        shell=AgentShell(
            source,
            settings.agent_user,
            replace(scripts.env, hidden=(*hidden, str(places.results), str(base.path))),
        ),
        source=str(source),
        script_timeout=settings.script_timeout,
    )
    _log.info(contained.replace("containment: ", "scripts: containment ", 1))
    _log.info("task %s, difficulty level %d (%s)", inputs.task.id, level.number, level.name)
    stop_early_answers()  # the server answers from now on
    serve(service, listening, workers=settings.workers)
