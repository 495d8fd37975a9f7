"""The machine's own preparation, when CI runs it beside the tests (`.ci/run`).

`.ci/run` installs Chromium and the container engine and builds the base images while the
project installs, the linters run and the first tests start; it holds an exclusive lock on the
file named by `SSEGRADE_SETUP_LOCK` until it is done. A test that needs what it prepares waits
here for the lock first; without the variable (a developer's run) there is nothing to wait for.
"""

from __future__ import annotations

import fcntl
import os


def wait_for_machine_setup() -> None:
    """Block until the machine's preparation, if one runs, has ended."""
    path = os.environ.get("SSEGRADE_SETUP_LOCK")
    if not path:
        return
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return
    try:
        fcntl.flock(descriptor, fcntl.LOCK_SH)
    finally:
        os.close(descriptor)
