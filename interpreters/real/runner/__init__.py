"""Running untrusted task scripts for real (SPEC §5): the runner account (`account`), one
script run, its process and its log (`script`, `launch`, `launcher`, `output`), its
containment (`policy`, `probe`, `inside`, `cgroups`, `cgroupmount`, `containment`, `residue`,
`turns`), what a dead grader leaves and the
guardian that removes it (`guardian`, `guarding`), its environment (`environment`), and the
processes it leaves (`processes`).

Interpreter layer; Linux only. Each name is loaded from its module on first use, so that a
module needing one (the runner account, a constant) does not load every other.
"""

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from interpreters.real.runner.account import DEFAULT_PATH, Runner, RunnerError, resolve_runner
    from interpreters.real.runner.environment import EnvPolicy, script_environment
    from interpreters.real.runner.guardian import OWNER_VAR
    from interpreters.real.runner.guarding import release_scratch, scratch_folder
    from interpreters.real.runner.output import OUTPUT_KEPT, LogWriteError
    from interpreters.real.runner.policy import (
        DEFAULT_PIDS,
        DEFAULT_TMP_SIZE,
        ContainmentPolicy,
        ContainmentRefused,
        Mechanisms,
    )
    from interpreters.real.runner.probe import choose, probe
    from interpreters.real.runner.processes import RUN_VAR, SESSION_VAR, kill_session, new_session
    from interpreters.real.runner.script import run_script

__all__ = [
    "DEFAULT_PATH",
    "DEFAULT_PIDS",
    "DEFAULT_TMP_SIZE",
    "OUTPUT_KEPT",
    "OWNER_VAR",
    "RUN_VAR",
    "SESSION_VAR",
    "ContainmentPolicy",
    "ContainmentRefused",
    "EnvPolicy",
    "LogWriteError",
    "Mechanisms",
    "Runner",
    "RunnerError",
    "choose",
    "kill_session",
    "new_session",
    "probe",
    "release_scratch",
    "resolve_runner",
    "run_script",
    "scratch_folder",
    "script_environment",
]

_HOMES = {
    "DEFAULT_PATH": "interpreters.real.runner.account",
    "Runner": "interpreters.real.runner.account",
    "RunnerError": "interpreters.real.runner.account",
    "resolve_runner": "interpreters.real.runner.account",
    "EnvPolicy": "interpreters.real.runner.environment",
    "script_environment": "interpreters.real.runner.environment",
    "OWNER_VAR": "interpreters.real.runner.guardian",
    "release_scratch": "interpreters.real.runner.guarding",
    "scratch_folder": "interpreters.real.runner.guarding",
    "OUTPUT_KEPT": "interpreters.real.runner.output",
    "LogWriteError": "interpreters.real.runner.output",
    "DEFAULT_PIDS": "interpreters.real.runner.policy",
    "DEFAULT_TMP_SIZE": "interpreters.real.runner.policy",
    "ContainmentPolicy": "interpreters.real.runner.policy",
    "ContainmentRefused": "interpreters.real.runner.policy",
    "Mechanisms": "interpreters.real.runner.policy",
    "choose": "interpreters.real.runner.probe",
    "probe": "interpreters.real.runner.probe",
    "RUN_VAR": "interpreters.real.runner.processes",
    "SESSION_VAR": "interpreters.real.runner.processes",
    "kill_session": "interpreters.real.runner.processes",
    "new_session": "interpreters.real.runner.processes",
    "run_script": "interpreters.real.runner.script",
}

lazy_face(__name__, _HOMES)
