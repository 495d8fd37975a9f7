"""Starting the guardian of a grading's scratch folder (the process is `guardian`'s).

Interpreter layer (processes). `start_guardian` runs the probe first (which removes the
cgroups dead gradings left), then starts the guardian with this process's owner tag, the
folder and the cgroup parents; `Guardian.done` tells it the grading ended, and it removes the
folder in the background. If this process dies before, the pipe ends without `done`: the
guardian kills what the grading left running and removes the folder.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from interpreters.real.files import remove_tree
from interpreters.real.runner import guardian
from interpreters.real.runner.account import TOOL_ENV
from interpreters.real.runner.probe import probe

__all__ = ["Guardian", "start_guardian"]


@dataclass(slots=True)
class Guardian:
    """The guardian of one grading: `done` once the grading has ended."""

    folder: Path | None
    pipe: int | None
    process: subprocess.Popen[bytes] | None

    def done(self) -> None:
        """The grading ended: the folder goes in the background (here and now when no
        guardian could be started)."""
        pipe, self.pipe = self.pipe, None
        if pipe is None:
            if self.folder is not None:
                remove_tree(self.folder)
            return
        try:
            os.write(pipe, b"done")
        except OSError:
            if self.folder is not None:
                remove_tree(self.folder)
        finally:
            os.close(pipe)


def start_guardian(folder: Path | None) -> Guardian:
    """Start the guardian of a grading whose scratch folder is `folder` (None: only what
    the grading's scripts leave running is guarded)."""
    offer = probe()
    groups = offer.cgroups.parents.values() if offer.cgroups is not None else []
    parents = sorted({os.fspath(parent) for parent in groups})
    command = [
        sys.executable,
        "-I",
        "-S",
        os.fspath(Path(guardian.__file__ or "guardian.py")),
        guardian.owner_tag(),
        "-" if folder is None else os.fspath(folder),
        *parents,
    ]
    read, write = os.pipe()
    try:
        process = subprocess.Popen(
            command,
            stdin=read,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # a Ctrl-C at the terminal is not for it
            cwd="/",
            env=TOOL_ENV,
        )
    except OSError:
        os.close(write)
        return Guardian(folder, None, None)
    finally:
        with contextlib.suppress(OSError):
            os.close(read)
    return Guardian(folder, write, process)
