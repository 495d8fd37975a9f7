"""Before and around grading, for every entry point: the inputs checked, the results folder
held, the one set-up of a grading (`grading_setup`), and a result written whatever happens.

Application layer, with no command-line code: errors are plain exceptions (`InputError`,
`NotWritten`, `Interrupted`) that the commands alone turn into exit statuses.

| module | its one job |
|---|---|
| `errors` | what the Python API raises |
| `inputs` | the task, the tree, the runner, a recorded patch checked; hidden material locked |
| `folders` | the results folder made ready and held |
| `baselines` | the baseline and the grading repo |
| `prepare` | `grading_setup`: scratch folder, locks, baseline, grading repo, places |
| `graded` | a grading whose `result.json` is written whatever happens |
"""

from interpreters.app.setup.baselines import grading_repo, keep_repo_copy
from interpreters.app.setup.errors import InputError, Interrupted, NotWritten
from interpreters.app.setup.folders import (
    RESULTS_ENTRIES,
    discard_made,
    hold_results,
    make_results,
)
from interpreters.app.setup.graded import graded, interrupts_raise, verdict_line
from interpreters.app.setup.inputs import Inputs, load_inputs, lock_task, not_a_diff
from interpreters.app.setup.prepare import SetUp, Sources, grading_setup
from interpreters.real.resultsfolder import DEFAULT_RESULTS

__all__ = [
    "DEFAULT_RESULTS",
    "RESULTS_ENTRIES",
    "InputError",
    "Inputs",
    "Interrupted",
    "NotWritten",
    "SetUp",
    "Sources",
    "discard_made",
    "graded",
    "grading_repo",
    "grading_setup",
    "hold_results",
    "interrupts_raise",
    "keep_repo_copy",
    "load_inputs",
    "lock_task",
    "make_results",
    "not_a_diff",
    "verdict_line",
]
