"""Run folders as SSEBench leaves them: a `summary.json` document, and the folder it is
written to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def summary(
    task: str = "t1",
    model: str | None = None,
    agent: str | None = None,
    status: str = "passed",
    **extra: Any,
) -> dict[str, Any]:
    """A summary.json document as SSEBench writes it; model and agent only when given."""
    run: dict[str, Any] = {"mode": "sandbox", "timeout": 3600, "difficulty": 2}
    run["reference_run"] = False
    if model is not None:
        run["model"] = model
    if agent is not None:
        run["agent"] = agent
    return {
        "task": {"id": task, "scripts": {"build": "build.sh"}},
        "config": run,
        "patch_result": {"status": status, "build_success": status == "passed"},
        "runtime_result": {"agent_duration": 60},
        "spend": 1.25,
        "started_at": "2025-06-01T10:00:00Z",
        **extra,
    }


def write_run(
    root: Path, rel: str, doc: dict[str, Any] | str | None, name: str = "summary.json"
) -> Path:
    """Make the run folder `root/rel` and write `name` in it (text as is, dicts as JSON)."""
    folder = root / rel
    folder.mkdir(parents=True, exist_ok=True)
    if doc is not None:
        text = doc if isinstance(doc, str) else json.dumps(doc)
        (folder / name).write_text(text)
    return folder
