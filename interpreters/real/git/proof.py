"""The fidelity proof (`ProvePatch`): the captured patch applied to its base gives its tree.

Interpreter side (processes, files); SPEC §4. The patch is applied to the base tree in a
scratch index, never to a work tree; the caller compares the tree id with the capture's.
"""

from __future__ import annotations

from returns.result import Failure, Result, Success

from interpreters.real.git.command import GitError, lay_out, scratch, why
from interpreters.real.git.repository import Baseline
from ssegrade.effects import CaptureError
from ssegrade.run import Deadline


def prove(
    baseline: Baseline, patch: bytes, base_tree: str, *, until: Deadline | None = None
) -> Result[str, CaptureError]:
    """The fidelity proof: apply `patch` to `base_tree` in a scratch index; answer the tree id.

    The caller compares it with the capture's new tree. Killed at `until`, as `capture` is.
    """
    try:
        with scratch(until=until) as s:
            repo = s.top / "repo"
            lay_out(repo)
            env = s.environment(
                repo,
                index=s.work / "index",
                objects=s.work / "objects",
                alternates=baseline.objects,
            )
            s.git(["read-tree", base_tree], env=env)
            s.git(
                ["apply", "--cached", "--binary", "--whitespace=nowarn", "--allow-empty"],
                env=env,
                stdin=patch,
            )
            return Success(s.git(["write-tree"], env=env).text())
    except (GitError, OSError) as exc:
        return Failure(CaptureError(f"the captured patch does not apply to its base: {why(exc)}"))
