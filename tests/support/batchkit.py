"""Batch grading without grading: a stand-in grader that decides by the patch's words, and a
progress reporter that keeps its lines.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ssegrade import EvaluationResult, PatchResult, RuntimeResult, Status
from ssegrade.internal.request import Graded, Request
from ssegrade.internal.verdict import Outcomes, TimedOut, document
from tests.support.realtask import BUILD, RealTask, fix_to, make_task
from tests.support.scriptmarks import mark


def saying(words: str) -> str:
    """A recorded patch for `verdict_grade` that says `words`: a real diff (a batch refuses
    a patch that is not one) whose last word is the last of `words`."""
    return fix_to(words)


def verdict_grade(request: Request[Any]) -> Graded:
    """`verdict_of` as a grading entry: the request in, its document out."""
    return Graded(
        verdict_of(
            Path(request.task),
            request.patch if request.patch is not None else b"",
            Path(request.results),
            timeout=request.limits.timeout,
            runtime=request.runtime,
            force=request.force,
        )
    )


def verdict_of(
    task: Path,
    patch: Path | bytes,
    results: Path,
    *,
    timeout: int = 3600,
    runtime: RuntimeResult | None = None,
    force: bool = False,
) -> EvaluationResult:
    """A stand-in for grading: `passed` when the patch says `fixed`, `error` when it says
    `crash`, else `failed`; writes the files a grading writes. A patch naming `fault-once`
    meets a host fault (raises as a grading whose host broke down does) the first time it is
    graded (a mark beside the task folder remembers it), and `fault-always` every time. One
    naming `hang` runs out of its time limit: an `error` of kind `timeout`."""
    data = patch if isinstance(patch, bytes) else patch.read_bytes()
    if b"hang" in data:
        (results / "logs").mkdir(parents=True, exist_ok=True)
        hung = document(Outcomes(frozenset({"build"}), ending=TimedOut(timeout)), RuntimeResult())
        (results / "result.json").write_bytes(hung.to_json())
        return hung
    if b"crash" in data:
        raise RuntimeError("the grading crashed")
    if b"fault-" in data:
        mark = task.parent.parent / f"faulted-{data.split()[-1].decode()}"
        if b"fault-always" in data or (b"fault-once" in data and not mark.exists()):
            mark.touch()
            raise OSError(28, "No space left on device")
    status: Status = "passed" if b"fixed" in data else "failed"
    result = EvaluationResult(
        patch_result=PatchResult(status=status, build_success=status == "passed"),
        runtime_result=runtime or RuntimeResult(),
    )
    assert not (results / "result.json").exists() or force
    (results / "logs").mkdir(parents=True, exist_ok=True)
    (results / "logs" / "01-build.log").write_text(f"pid {os.getpid()}\n")
    (results / "final.patch").write_bytes(data)
    (results / "checks.jsonl").write_text("")
    (results / "result.json").write_bytes(result.to_json())
    return result


class Quiet:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def begin(self, tally: Any) -> None:
        pass

    def finished(self, tally: Any, line: str, *, notable: bool = False) -> None:
        self.lines.append(line)

    def note(self, message: str) -> None:
        self.lines.append(message)

    def tick(self, tally: Any) -> None:
        pass

    def end(self, line: str) -> None:
        self.lines.append(line)


HANGING = BUILD.replace(
    'echo "$VALUE" > out.txt',
    'if [ "$VALUE" = slow ]; then sleep "${HANG:-0}" 0.{t}; fi\necho "$VALUE" > out.txt',
)
"""The build of a job whose value is `slow` sleeps `HANG` seconds (a script option: not part
of the job's digest), with a token on its command line."""


def holding_task(root: Path, tail: str) -> RealTask:
    """The shell task, whose functional test says it is running (it is marked
    `$BATCH_STATE/ready-<VALUE>`), then runs `tail`."""
    made = make_task(root)
    made.script(
        "test.sh",
        "#!/bin/sh\n"
        "if [ -e tests/intent.sh ]; then sh tests/intent.sh; exit; fi\n"
        ". ./lib.sh\n"
        f"{mark('$BATCH_STATE/ready-$VALUE')}\n"
        f"{tail}\n",
    )
    return made


SCRIPT_ENV = ["--script-env", "BATCH_STATE"]
"""Scripts get `BATCH_STATE` only when it is named (it is on no allow-list)."""
