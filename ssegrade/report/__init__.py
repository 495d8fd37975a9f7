"""The report: from run folders' documents to pass shares per (model, agent), with statistics.

Pure core, one concept per module; other tools import this package alone:

- `ssegrade.report._summary`: one `summary.json`/`result.json` → a small `RunRecord`
  (`parse_run`), its grade read as `ssegrade.internal.result.PatchResult`;
- `ssegrade.report._select`: which runs count, folded one run at a time (`Selector`);
- `ssegrade.report._rules`: ssegrade's rules and SSEBench's report's (`--rules ssebench`);
- `ssegrade.report._aggregate`: shares, pass@k, intervals → the `Report` (`summarize`,
  `aggregate`), or task by task (`Fold`, whose `TaskPart`s are final at once);
- `ssegrade.report._tally`: a row counted task by task without its runs;
- `ssegrade.report._compare`: paired McNemar comparisons with Holm's adjustment (`Outcomes`:
  which row passed which task, in bits);
- `ssegrade.report._guard`: the patch guard's columns, and shares without flagged runs;
- `ssegrade.report._model`: the report model (the `--format json` document);
- `ssegrade.report._stats`: the statistics, plain arithmetic on counts (Wilson intervals,
  pass@k and pass^k, the exact McNemar test, Holm's adjustment).

Finding and reading files is `interpreters.report.io`'s job; printing is the renderers'.
"""

from ssegrade.report._aggregate import Fold, TaskPart, aggregate, parts_of, summarize
from ssegrade.report._batch import parse_batch
from ssegrade.report._compare import Outcomes, compare, compare_all, find_row
from ssegrade.report._guard import (
    GuardTally,
    RowGuard,
    exclude_flagged,
    flagged_as_failed,
    row_guard,
)
from ssegrade.report._hackable import HackableReport, VerifiedTask, hackable_report, verified_task
from ssegrade.report._model import (
    Comparison,
    Containment,
    ErrorCounts,
    Excluded,
    Interval,
    Report,
    Row,
    RowKey,
    RunsMode,
    Share,
    TaskRow,
    TaskRun,
)
from ssegrade.report._paths import relative_message
from ssegrade.report._rules import DIFFERENCE, Rules
from ssegrade.report._select import Selection, Selector, natural_key, run_order
from ssegrade.report._stats import (
    CLUSTERED_NAME,
    INTERVAL_NAME,
    TEST_NAME,
    Z95,
    clustered_wilson,
    holm,
    mcnemar_exact,
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_at_k,
    pass_hat_k,
    wilson,
    wilson_of_share,
)
from ssegrade.report._summary import ReadError, RunFolder, RunRecord, parse_run, poc_passed

__all__ = [
    "CLUSTERED_NAME",
    "DIFFERENCE",
    "INTERVAL_NAME",
    "TEST_NAME",
    "Z95",
    "Comparison",
    "Containment",
    "ErrorCounts",
    "Excluded",
    "Fold",
    "GuardTally",
    "HackableReport",
    "Interval",
    "Outcomes",
    "ReadError",
    "Report",
    "Row",
    "RowGuard",
    "RowKey",
    "Rules",
    "RunFolder",
    "RunRecord",
    "RunsMode",
    "Selection",
    "Selector",
    "Share",
    "TaskPart",
    "TaskRow",
    "TaskRun",
    "VerifiedTask",
    "aggregate",
    "clustered_wilson",
    "compare",
    "compare_all",
    "exclude_flagged",
    "find_row",
    "flagged_as_failed",
    "hackable_report",
    "holm",
    "mcnemar_exact",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "natural_key",
    "parse_batch",
    "parse_run",
    "parts_of",
    "pass_at_k",
    "pass_hat_k",
    "poc_passed",
    "relative_message",
    "row_guard",
    "run_order",
    "summarize",
    "verified_task",
    "wilson",
    "wilson_of_share",
]
