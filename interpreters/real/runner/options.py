"""What a command's script options asked for, gathered (`ScriptOptions`): the environment, the
memory limit and the containment of every script a grading runs.

Interpreter layer (processes). The command line parses them (`interpreters.cli.script_options`);
the evaluator, the daemon, verify and batch take them from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from interpreters.real.runner import DEFAULT_TMP_SIZE, ContainmentPolicy, EnvPolicy
from interpreters.real.runner.policy import Mode, Network

__all__ = ["ScriptOptions"]


@dataclass(frozen=True, slots=True)
class ScriptOptions:
    """What the script options asked for: the environment, the memory limit and the
    containment of every script."""

    env: EnvPolicy = field(default_factory=EnvPolicy)
    memory: int | None = None
    containment: ContainmentPolicy = field(default_factory=ContainmentPolicy)

    @staticmethod
    def of(
        *,
        script_env: tuple[tuple[str, str], ...] = (),
        clean_env: bool = False,
        script_memory: int | None = None,
        containment: Mode | None = None,
        script_network: Network = "loopback",
        script_tmp_size: int | None = None,
    ) -> ScriptOptions:
        """From the parameters of `script_env_options` and `containment_options`."""
        size = DEFAULT_TMP_SIZE if script_tmp_size is None else script_tmp_size
        return ScriptOptions(
            EnvPolicy(extra=script_env, clean=clean_env),
            script_memory,
            ContainmentPolicy(containment, script_network, size),
        )
