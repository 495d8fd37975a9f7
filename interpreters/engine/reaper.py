"""What removes a batch's containers and staging folders when its driver dies (kill -9).

Interpreter layer (processes). The reaper is a small process in a session of its own (the
terminal's signals are not its), reading a pipe whose only writing end the driver holds.
When the driver ends its batch it says `done` and the reaper leaves; when the driver dies in
any way, the pipe closes without it and the reaper kills and removes every container that
carries the batch's label, unmounts the staging folders and removes their top folder.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ssegrade.batch import EngineProgram, batch_containers_argv, remove_argv

__all__ = ["DONE", "Reaper"]

DONE = b"done"

_REAPER = """
import json, os, shutil, subprocess, sys
said = b""
while True:
    try:
        block = os.read(0, 64)
    except InterruptedError:
        continue
    if not block:
        break
    said += block
if said == b"done":
    sys.exit(0)
program, listing, removing, root = json.loads(sys.argv[1])
quiet = dict(stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
for _ in range(3):
    ids = subprocess.run([program, *listing], text=True, **quiet).stdout.split()
    if not ids:
        break
    subprocess.run([program, *removing, *ids], **quiet)
if os.path.isdir(root):
    for entry in os.listdir(root):
        subprocess.run(["umount", "-l", os.path.join(root, entry, "out")], **quiet)
    shutil.rmtree(root, ignore_errors=True)
"""


@dataclass
class Reaper:
    """The reaper of one batch: started with the batch's engine, label and staging root."""

    process: subprocess.Popen[bytes]
    pipe: int

    @staticmethod
    def start(engine: EngineProgram, program: str, batch: str, root: Path) -> Reaper:
        """Start the reaper of `batch`: it acts once this process dies without `finish`."""
        listing = batch_containers_argv(engine, batch)
        removing = remove_argv(engine, [])
        plan = json.dumps([program, listing, removing, str(root)])
        read, write = os.pipe()  # both ends close on exec: only the reaper gets `read`
        try:
            process = subprocess.Popen(
                [sys.executable, "-I", "-c", _REAPER, plan],
                stdin=read,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        except BaseException:
            os.close(write)
            raise
        finally:
            os.close(read)
        return Reaper(process, write)

    def finish(self) -> None:
        """The batch cleaned up after itself: the reaper leaves without acting."""
        with contextlib.suppress(OSError):
            os.write(self.pipe, DONE)
        with contextlib.suppress(OSError):
            os.close(self.pipe)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.process.wait(10)
