"""How local batch workers start: fresh interpreters that never run the caller's main script.

Interpreter layer (processes). A worker started with multiprocessing's `spawn` method first
imports the parent's main module again (as `__mp_main__`), which runs a plain script's
top-level code once more: a script that calls `run_batch` without an
`if __name__ == "__main__":` guard would start a batch inside each worker, and its pool would
break. The workers need nothing from that module (the grading function and the work travel by
their importable names), so `worker_context` starts them as if the program had no main
module. A grading function defined in the main script itself does need it: the plain `spawn`
method is then used, and such a script needs the guard, as any multiprocessing program does.
"""

from __future__ import annotations

import sys
import types
from multiprocessing import context, popen_spawn_posix
from multiprocessing.process import BaseProcess

__all__ = ["worker_context"]

_NO_MAIN = types.ModuleType("__main__")
"""What a worker is told the main module is while it starts: one with no file to import."""


class _MainlessPopen(popen_spawn_posix.Popen):
    """A spawned worker whose start-up data names no main module."""

    def _launch(self, process_obj: BaseProcess) -> None:
        # The start-up data is read from `sys.modules["__main__"]` while the process starts;
        # it is put back at once, whatever happens.
        main = sys.modules["__main__"]
        sys.modules["__main__"] = _NO_MAIN
        try:
            super()._launch(process_obj)  # type: ignore[misc]
        finally:
            sys.modules["__main__"] = main


class _Process(context.SpawnProcess):
    _start_method = "spawn"

    @staticmethod
    def _Popen(process_obj: BaseProcess) -> popen_spawn_posix.Popen:
        return _MainlessPopen(process_obj)


class _Context(context.SpawnContext):
    _name = "spawn"
    Process = _Process


_CONTEXT = _Context()


def _from_main(grade: object) -> bool:
    return "__main__" in (getattr(grade, "__module__", None), type(grade).__module__)


def worker_context(grade: object) -> context.BaseContext:
    """The multiprocessing context local workers start with (the `spawn` method): one that
    does not run the main script again in each worker, unless `grade` (the grading function
    the workers call) is defined there."""
    if _from_main(grade):
        return context.SpawnContext()
    return _CONTEXT
