"""Running untrusted task scripts for real (SPEC §5): the runner account (`account`), one
script run, its process and its log (`script`, `launch`, `output`), its containment
(`containment`), its environment (`environment`), and the processes it leaves (`processes`).

Interpreter layer; Linux only.
"""

from interpreters.real.runner.account import DEFAULT_PATH, Runner, RunnerError, resolve_runner
from interpreters.real.runner.containment import DEFAULT_PIDS, Mechanisms, probe
from interpreters.real.runner.environment import EnvPolicy, script_environment
from interpreters.real.runner.output import OUTPUT_KEPT, LogWriteError
from interpreters.real.runner.processes import RUN_VAR, SESSION_VAR, kill_session, new_session
from interpreters.real.runner.script import run_script

__all__ = [
    "DEFAULT_PATH",
    "DEFAULT_PIDS",
    "OUTPUT_KEPT",
    "RUN_VAR",
    "SESSION_VAR",
    "EnvPolicy",
    "LogWriteError",
    "Mechanisms",
    "Runner",
    "RunnerError",
    "kill_session",
    "new_session",
    "probe",
    "resolve_runner",
    "run_script",
    "script_environment",
]
