"""The daemon's options, as the command line and the environment gave them.

Interpreter layer: read by `interpreters.daemon.startup` (the checks, the set-up, the
listeners) and by `interpreters.daemon.serving` (the service and its server), which loads only
once the agent-facing listeners are bound.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from interpreters.daemon.workers import DEFAULT_WORKERS
from interpreters.real.runner.options import ScriptOptions

__all__ = ["Settings"]


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
