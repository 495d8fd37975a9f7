"""Real task folders and source trees for end-to-end and contract tests.

The project is a few shell files: `lib.sh` sets VALUE; the build writes it to `out.txt`, fails
when VALUE is `broken`; a PoC passes when the built value is `fixed`; the functional tests run
every `tests/*.sh`; the hidden diff adds a test that requires `fixed`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from ssegrade.testing import Scenario, Script

GIT_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "Agent",
    "GIT_AUTHOR_EMAIL": "agent@example.invalid",
    "GIT_COMMITTER_NAME": "Agent",
    "GIT_COMMITTER_EMAIL": "agent@example.invalid",
}

BUILD = """#!/bin/sh
. ./lib.sh
if [ "$VALUE" = broken ]; then echo "build: VALUE is broken" >&2; exit 2; fi
echo "$VALUE" > out.txt
"""
RUN = """#!/bin/sh
test -f out.txt || { echo "no build output" >&2; exit 3; }
grep -q fixed out.txt || { echo "PoC $1 triggered the bug" >&2; exit 1; }
"""
TEST = """#!/bin/sh
for t in tests/*.sh; do sh "$t" || { echo "$t failed" >&2; exit 1; }; done
echo "all tests passed"
"""
INTENT_DIFF = """diff --git a/tests/intent.sh b/tests/intent.sh
new file mode 100644
--- /dev/null
+++ b/tests/intent.sh
@@ -0,0 +1,2 @@
+. ./lib.sh
+[ "$VALUE" = fixed ]
"""


def git(cwd: Path, *args: str) -> str:
    """Run git in a test repository (the test's own, never the grader's environment)."""
    done = subprocess.run(
        ["git", *args], cwd=cwd, env=GIT_ENV, capture_output=True, text=True, check=True
    )
    return done.stdout


@dataclass
class RealTask:
    """A task folder and the agent's source tree, made in a temporary folder."""

    root: Path

    @property
    def task(self) -> Path:
        return self.root / "task"

    @property
    def source(self) -> Path:
        return self.root / "source"

    @property
    def results(self) -> Path:
        return self.root / "results"

    @property
    def baseline(self) -> Path:
        return self.root / "baseline"

    def set_value(self, value: str) -> None:
        """What the agent does: edit lib.sh."""
        (self.source / "lib.sh").write_text(f"VALUE={value}\n")

    def script(self, name: str, body: str) -> None:
        """Replace one of the task's scripts."""
        path = self.task / "scripts" / name
        path.write_text(body)
        path.chmod(0o755)


def make_task(
    root: Path,
    *,
    pocs: int = 2,
    config: dict[str, object] | None = None,
    intent_diff: str = INTENT_DIFF,
) -> RealTask:
    """Write a task folder and a source tree with one initial commit."""
    made = RealTask(root)
    scripts = made.task / "scripts"
    scripts.mkdir(parents=True)
    for name, body in (("build.sh", BUILD), ("run.sh", RUN), ("test.sh", TEST)):
        made.script(name, body)
    (made.task / "pocs").mkdir()
    for index in range(pocs):
        (made.task / "pocs" / f"poc{index + 1}.bin").write_bytes(bytes([index, 0, 255]))
    (made.task / "future.diff").write_text(intent_diff)
    document: dict[str, object] = {
        "id": "shell-001",
        "project": "shell",
        "language": "sh",
        "scripts": {
            "build": "scripts/build.sh",
            "run": "scripts/run.sh",
            "test": "scripts/test.sh",
        },
        "files": {
            "poc": [f"pocs/poc{i + 1}.bin" for i in range(pocs)],
            "future_test": "future.diff",
        },
        "informative_extra": {"kept": True},
    }
    document.update(config or {})
    (made.task / "config.yaml").write_text(yaml.safe_dump(document))
    source = made.source
    (source / "tests").mkdir(parents=True)
    (source / "lib.sh").write_text("VALUE=bug\n")
    (source / "tests" / "exists.sh").write_text("test -f lib.sh\n")
    (source / ".gitignore").write_text("out.txt\n")
    git(source, "init", "-q", "-b", "main")
    git(source, "add", "-A")
    git(source, "commit", "-q", "-m", "initial")
    return made


def ssegrade(
    *args: str, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run the console script in a subprocess, as a user would."""
    return subprocess.run(
        [sys.executable, "-c", "from interpreters.cli.entry import main; main()", *args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=timeout,
        check=False,
    )


def fix_to(value: str) -> str:
    """The patch that sets `VALUE` to `value` in the task's `lib.sh`."""
    return (
        "diff --git a/lib.sh b/lib.sh\n--- a/lib.sh\n+++ b/lib.sh\n"
        f"@@ -1 +1 @@\n-VALUE=bug\n+VALUE={value}\n"
    )


def write_jobs(root: Path, made: RealTask, patches: dict[str, str], **extra: Any) -> Path:
    """One job per patch (name → patch text), run id = name."""
    (root / "patches").mkdir(exist_ok=True)
    lines = []
    for name, text in patches.items():
        (root / "patches" / f"{name}.patch").write_text(text)
        job = {
            "task": os.path.relpath(made.task, root),
            "patch": f"patches/{name}.patch",
            "repo": os.path.relpath(made.source, root),
            "run_id": name,
            **extra,
        }
        lines.append(json.dumps(job))
    jobs = root / "jobs.jsonl"
    jobs.write_text("\n".join(lines) + "\n")
    return jobs


FIX = """diff --git a/lib.sh b/lib.sh
--- a/lib.sh
+++ b/lib.sh
@@ -1 +1 @@
-VALUE=bug
+VALUE=fixed
"""


def shell_task(root: Path, *, patch: str | None = FIX) -> RealTask:
    """The shell task with a reference patch that fixes it (`FIX`, or `patch`; none: none)."""
    files: dict[str, Any] = {
        "poc": ["pocs/poc1.bin", "pocs/poc2.bin"],
        "future_test": "future.diff",
    }
    if patch is not None:
        files["patch"] = "fix.diff"
    made = make_task(root, config={"files": files})
    if patch is not None:
        (made.task / "fix.diff").write_text(patch)
    return made


def _ends_as(ending: Script) -> str:
    out = f"printf %s {shlex.quote(ending.stdout)}; " if ending.stdout else ""
    err = f"printf %s {shlex.quote(ending.stderr)} >&2; " if ending.stderr else ""
    return f"{out}{err}exit {ending.code}"


def scenario_scripts(made: RealTask, scenario: Scenario) -> None:
    """Write the task's scripts so that each run ends as `scenario` says, by run label: the
    PoC script by the PoC's file name, the test script by whether the hidden diff's
    `tests/intent.sh` is there."""

    def branch(label: str) -> str:
        return _ends_as(scenario.scripts.get(label, Script()))

    intent, function = branch("intent_test"), branch("function_test")
    made.script("build.sh", f"#!/bin/sh\n{branch('build')}\n")
    cases = " ".join(f"poc{i}.bin) {branch(f'poc-{i}')};;" for i in range(1, 10))
    made.script("run.sh", f'#!/bin/sh\ncase "$(basename "$1")" in {cases} esac\n')
    made.script("test.sh", f"#!/bin/sh\nif [ -f tests/intent.sh ]; then {intent}; fi\n{function}\n")


CLI = [sys.executable, "-c", "from interpreters.cli.entry import main; main()"]
"""The `ssegrade` command in a process of its own."""


def evaluating(made: RealTask, *extra: str) -> list[str]:
    """The `ssegrade evaluate` command of `made`."""
    args = ["evaluate", "--task", str(made.task), "--source", str(made.source)]
    return [*CLI, *args, "--results", str(made.results), *extra]


def log_of(results: Path, check: str, poc: int | None = None) -> str:
    """The log of one check, found through checks.jsonl."""
    for line in (results / "checks.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["name"] == check and (poc is None or f"poc{poc}" in str(record["poc"])):
            return Path(record["log_file"]).read_text()
    raise AssertionError(f"no {check} check in {results}")
