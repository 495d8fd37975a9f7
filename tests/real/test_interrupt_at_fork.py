"""An interrupt that lands while a grading starts a process is never lost.

Starting a script with `preexec_fn` runs Python hooks around the fork (`logging`'s lock), and
a process object that goes away runs its finalizer; an exception raised by a signal handler
inside either is printed as `Exception ignored in: <function _releaseLock …>` and never
reaches the grading, which then runs on after a second Ctrl-C. A real process starts
processes in a loop under the grading's interrupt handler while another sends it SIGTERM
again and again: every interrupt must reach it, and nothing be printed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

CHILD = """
import signal, subprocess, sys
from interpreters.app.setup import interrupts_raise
from ssegrade.internal.program import SignalArrived

signal.signal(signal.SIGTERM, signal.SIG_IGN)  # between two gradings
caught = 0
print("ready", flush=True)
while caught < int(sys.argv[1]):
    try:
        with interrupts_raise():
            while True:
                subprocess.run(["true"], preexec_fn=lambda: None, check=False)
    except SignalArrived:
        caught += 1
signal.signal(signal.SIGTERM, signal.SIG_IGN)  # as the worker ends
print(caught, flush=True)
"""


@pytest.mark.slow
def test_no_interrupt_is_lost_in_a_fork_hook() -> None:
    wanted = 300
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(wanted)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    deadline = time.monotonic() + 120
    while child.poll() is None:
        if time.monotonic() > deadline:  # an interrupt was lost: the loop never ends
            child.kill()
            pytest.fail(f"interrupts lost: {child.communicate()[1][:2000]}")
        try:
            os.kill(child.pid, signal.SIGTERM)
        except ProcessLookupError:
            break
        time.sleep(0.003)
    out, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert out.strip() == str(wanted)
    assert "Exception ignored" not in err
    assert err == ""
