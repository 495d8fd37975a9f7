"""The results folder: made private, held by one grading, believed, written.

Interpreter layer (files). Everything a grading or a batch does to a results folder happens
here; nothing in it is read unless ssegrade could only have written it itself. The set-up
(`interpreters.app.setup.folders`) holds the folder of `evaluate` and the daemon for the
process and turns its refusals into `InputError`.

| module | its one job |
|---|---|
| `private` | made private; a folder below opened by descriptors; a file believed (`read_trusted`) |
| `holding` | held: the `.lock` of the grading that writes it, `.incomplete` while rewritten |
| `ready` | `hold`: private, held, refused with an earlier grade unless forced (cleared safely) |
| `writer` | `ResultsWriter`: `checks.jsonl`, notes, the archive, `result.json`, `guard.json` |
| `runs` | the run folders of a batch, as its driver finds, holds and believes them |

Each name is loaded from its module on first use, so that a light one (`DEFAULT_RESULTS`, for
the command line's help) does not load the writer.
"""

from typing import TYPE_CHECKING

from ssegrade._lazy import lazy_face

if TYPE_CHECKING:
    from interpreters.real.resultsfolder.holding import FolderHeld, Hold
    from interpreters.real.resultsfolder.private import FolderRefused, make_private, read_trusted
    from interpreters.real.resultsfolder.ready import (
        AGENT_PHASE,
        DAEMON_OWN,
        DEFAULT_RESULTS,
        RESULTS_ENTRIES,
        NotReady,
        discard_unused,
        hold,
        write_result,
    )
    from interpreters.real.resultsfolder.writer import ARCHIVE_NAME, GUARD_NAME, ResultsWriter

__all__ = [
    "AGENT_PHASE",
    "ARCHIVE_NAME",
    "DAEMON_OWN",
    "DEFAULT_RESULTS",
    "GUARD_NAME",
    "RESULTS_ENTRIES",
    "FolderHeld",
    "FolderRefused",
    "Hold",
    "NotReady",
    "ResultsWriter",
    "discard_unused",
    "hold",
    "make_private",
    "read_trusted",
    "write_result",
]

_HOMES = {
    "FolderHeld": "interpreters.real.resultsfolder.holding",
    "Hold": "interpreters.real.resultsfolder.holding",
    "FolderRefused": "interpreters.real.resultsfolder.private",
    "make_private": "interpreters.real.resultsfolder.private",
    "read_trusted": "interpreters.real.resultsfolder.private",
    "AGENT_PHASE": "interpreters.real.resultsfolder.ready",
    "DAEMON_OWN": "interpreters.real.resultsfolder.ready",
    "DEFAULT_RESULTS": "interpreters.real.resultsfolder.ready",
    "RESULTS_ENTRIES": "interpreters.real.resultsfolder.ready",
    "NotReady": "interpreters.real.resultsfolder.ready",
    "discard_unused": "interpreters.real.resultsfolder.ready",
    "hold": "interpreters.real.resultsfolder.ready",
    "write_result": "interpreters.real.resultsfolder.ready",
    "ARCHIVE_NAME": "interpreters.real.resultsfolder.writer",
    "GUARD_NAME": "interpreters.real.resultsfolder.writer",
    "ResultsWriter": "interpreters.real.resultsfolder.writer",
}

lazy_face(__name__, _HOMES)
