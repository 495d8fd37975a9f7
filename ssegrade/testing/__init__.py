"""The testing kit: what tests of the grading program and of its interpreters are made of.

Pure core, public API (see docs/testing.md):

- `FakeWorld` (`ssegrade.testing._fake`): answers every effect from data, records the trace;
- combinators (`ssegrade.testing._combinators`) to wrap any interpreter: `Recording`,
  `Checked` (answer types), `Throwing` (exceptions at chosen effects, with `matching`),
  `Scripted` (answers from a table), `Timed` (effects that take time on a `Clock`);
- `Clock` (`ssegrade.testing._clock`): a clock that moves only when told;
- `check_interpreter` (`ssegrade.testing._conformance`): the contract every grading
  interpreter keeps, checked on `SCENARIOS` against the fake world;
- `ssegrade.testing.strategies`: hypothesis strategies and `Drawn`, an interpreter whose
  answers are drawn. It is the one module that imports hypothesis (`ssegrade[testing]`), and
  is not imported here.
"""

from ssegrade.testing._clock import Clock
from ssegrade.testing._combinators import Checked, Recording, Scripted, Throwing, Timed, matching
from ssegrade.testing._conformance import (
    SCENARIOS,
    Conformance,
    Grading,
    NonConformance,
    Scenario,
    check_interpreter,
)
from ssegrade.testing._fake import FakeWorld, Script

__all__ = [
    "SCENARIOS",
    "Checked",
    "Clock",
    "Conformance",
    "FakeWorld",
    "Grading",
    "NonConformance",
    "Recording",
    "Scenario",
    "Script",
    "Scripted",
    "Throwing",
    "Timed",
    "check_interpreter",
    "matching",
]
