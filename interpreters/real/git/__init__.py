"""Hermetic git for the real interpreter: the baseline, the capture, its proof, and apply.

Interpreter side of the layers: this package performs what the `CaptureTree`, `ProvePatch`,
`CheckPatch`, `FreshCopy` and `ApplyDiff` effects describe (SPEC §4); the core never imports
it.

| module | its one job |
|---|---|
| `command` | one hermetic git command in a fresh scratch folder, killed at its deadline |
| `repository` | the baseline's private repository: record, load, check the base tree out |
| `kept_index` | the baseline's index, whose stat data spare a capture the unchanged files |
| `index_file` | index files read and written in Python, placed without following a symlink |
| `staging` | a tree staged over the base in a private index |
| `refresh` | the staging's refresh: git's, or `hashing` when every file is to be hashed |
| `hashing` | every file of an index hashed as its owner, without git (a program of its own) |
| `capture_tree` | the capture: the patch and the agent's commit messages |
| `proof` | the fidelity proof of a captured patch, along the paths it touches |
| `trees` | tree objects parsed, edited along a few paths and hashed, for the proof |
| `apply` | `git apply` of a patch or a diff (neutral `GIT_DIR`); the files a patch changes |
| `changes` | the files a tree changes against the base |
| `identity` | whether a grading repo is exactly one commit (its HEAD's tree) |

The `GIT_DIR` of every command is one of ours, never the agent's `.git`, so nothing of the
agent's configuration (fsmonitor, external diff, filters, hooks) can run. The only git process
that enters the agent's repository is the `upload-pack` of a `git fetch`, which runs no hooks
and no configured command. As root, when the source tree belongs to another user, the commands
that read the tree (and the fetch out of its `.git`) run as that user with no supplementary
groups; they write their index and objects only in a part of the scratch folder given to that
user, and root moves what must be kept into the baseline, which stays writable by root only.
"""

from interpreters.real.git.apply import apply_diff, apply_patch, check_patch, patch_files
from interpreters.real.git.capture_tree import capture
from interpreters.real.git.changes import changed_files
from interpreters.real.git.command import GitFailure
from interpreters.real.git.identity import clean_tree
from interpreters.real.git.proof import prove
from interpreters.real.git.repository import (
    REPO_COPY,
    Baseline,
    checkout_baseline,
    load_baseline,
    record_baseline,
)

__all__ = [
    "REPO_COPY",
    "Baseline",
    "GitFailure",
    "apply_diff",
    "apply_patch",
    "capture",
    "changed_files",
    "check_patch",
    "checkout_baseline",
    "clean_tree",
    "load_baseline",
    "patch_files",
    "prove",
    "record_baseline",
]
