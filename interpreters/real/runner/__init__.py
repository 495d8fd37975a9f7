"""Running untrusted task scripts for real (SPEC §5): the runner account (`account`), one
script run, its process and its log (`script`, `launch`, `launcher`, `output`), its
containment (`policy`, `probe`, `inside`, `cgroups`, `cgroupmount`, `containment`, `residue`,
`turns`), what a dead grader leaves and the
guardian that removes it (`guardian`, `guarding`), its environment (`environment`), and the
processes it leaves (`processes`).

Interpreter layer; Linux only.
"""

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
