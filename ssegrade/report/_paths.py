"""Task files named relative to the task folder in a run's `error_msg`.

Pure core. A grading run here names a task file by its host path (`PoC failed:
/tmp/…/tasks/tlv-001/pocs/poc.py`): the report shows it relative to the task folder
(`PoC failed: pocs/poc.py`), so that the same failure reads (and groups) the same on every
host and a long folder does not fold one path over several lines. A path is cut when it
ends with a file the task config names (its scripts, PoCs, future test) or, without a task
config, at its `pocs/` folder. SSEBench's own paths (`/ssebench/…`) are what SSEBench prints
and stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from ssegrade.internal.checks import spec

__all__ = ["relative_message"]

_PATH = re.compile(r"/[^\s'\":,;()]+")
_KEEP = "/ssebench/"
_POCS = "/pocs/"
_POC_FAILED = spec("poc").failure_message("")
"""`PoC failed: `, before the PoC's path."""


def _cut(path: str, files: tuple[str, ...]) -> str:
    if path.startswith(_KEEP):
        return path
    for name in files:
        if path.endswith("/" + name) and len(path) > len(name) + 1:
            return name
    at = path.rfind(_POCS)
    return path[at + 1 :] if at > 0 else path


def relative_message(message: str, files: Iterable[str | None] = ()) -> str:
    """`message` with each absolute path of a task file made relative to the task folder
    (the task config's `files`, e.g. its scripts and PoCs, and any path's `pocs/…`).

    >>> relative_message("PoC failed: /tmp/x/tasks/t1/pocs/poc.py", ["pocs/poc.py"])
    'PoC failed: pocs/poc.py'
    >>> relative_message("PoC failed: /tmp/x/t1/pocs/a b/p.bin")
    'PoC failed: pocs/a b/p.bin'
    >>> relative_message("PoC failed: /ssebench/pocs/poc.bin")
    'PoC failed: /ssebench/pocs/poc.bin'
    >>> relative_message("Exception: cannot start /srv/t/scripts/b.sh: no", ["scripts/b.sh"])
    'Exception: cannot start scripts/b.sh: no'
    """
    if "/" not in message:
        return message
    named = tuple(sorted({f.strip("/") for f in files if f and f.strip("/")}, key=len)[::-1])
    if message.startswith(_POC_FAILED + "/"):  # one path, spaces and all
        return _POC_FAILED + _cut(message.removeprefix(_POC_FAILED), named)
    return _PATH.sub(lambda found: _cut(found.group(0), named), message)
