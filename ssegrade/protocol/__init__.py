"""The daemon protocol (SPEC §9): request and reply documents, and the rules that decide a request.

Pure core, one concept per module:

- `ssegrade.protocol.documents`: the pydantic models the daemon server and its clients (the
  evaluator's remote interpreter, `test-patch`) speak, from which the OpenAPI document of the
  API is generated; a bencher reply is `ssegrade.effects.ScriptResult` itself;
- `ssegrade.protocol.rules`: who may call which action (`refusal`), which PoC a request names
  (`resolve_poc`), the public view of a task (`public_project`, `capabilities`);
- `ssegrade.protocol.answers`: how the grading effects' answers travel
  (`bencher_reply`, `prepare_reply`/`prepared_result`) and patches as JSON;
- `ssegrade.protocol.changes`: how git's list of the changed files reads (`changed_files`).
"""

from ssegrade.protocol.answers import (
    bencher_reply,
    decode_patch,
    encode_patch,
    prepare_reply,
    prepared_result,
)
from ssegrade.protocol.changes import changed_files
from ssegrade.protocol.documents import (
    API_VERSION,
    AgentExitedReply,
    BencherRequest,
    Capabilities,
    ChangedFile,
    ChangeKind,
    ChangeStatus,
    DiffText,
    ErrorBody,
    FilesReply,
    Listener,
    PrepareApplyFailed,
    PrepareCaptureFailed,
    PrepareReply,
    PrepareSucceeded,
    ProjectScripts,
    ProjectView,
    VersionReply,
)
from ssegrade.protocol.rules import (
    AGENT_PHASE_OVER,
    capabilities,
    public_project,
    refusal,
    resolve_poc,
)

__all__ = [
    "AGENT_PHASE_OVER",
    "API_VERSION",
    "AgentExitedReply",
    "BencherRequest",
    "Capabilities",
    "ChangeKind",
    "ChangeStatus",
    "ChangedFile",
    "DiffText",
    "ErrorBody",
    "FilesReply",
    "Listener",
    "PrepareApplyFailed",
    "PrepareCaptureFailed",
    "PrepareReply",
    "PrepareSucceeded",
    "ProjectScripts",
    "ProjectView",
    "VersionReply",
    "bencher_reply",
    "capabilities",
    "changed_files",
    "decode_patch",
    "encode_patch",
    "prepare_reply",
    "prepared_result",
    "public_project",
    "refusal",
    "resolve_poc",
]
