"""The daemon protocol (SPEC §9): request and reply documents, and the rules that decide a request.

The daemon serves two APIs over the same state: SSEBench's wire at the root (`/version`,
`/tool/{name}`, …), exactly as SSEBench's own clients read it, and ssegrade's own under
`/ssegrade` (durations, kills, log files, outcomes), which ssegrade's client asks for.

Pure core, one concept per module:

- `ssegrade.protocol._documents`: ssegrade's own documents (under `/ssegrade`), which the
  evaluator's remote interpreter and `test-patch` speak; a bencher reply is
  `ssegrade.internal.effects.ScriptResult` itself;
- `ssegrade.protocol._wire`: SSEBench's own daemon wire, key for key (what its SDK, MCP server,
  evaluator and entrypoint read), and the replies built for it;
- `ssegrade.protocol._calls`: SSEBench's tool calls read, with its 500 texts;
- `ssegrade.protocol._rules`: who may call which action (`gate`, with each API's words:
  `refusal`, `ssebench_refusal`), which PoC a request names (`resolve_poc`), the public view of
  a task (`public_project`, `capabilities`);
- `ssegrade.protocol._answers`: how the grading effects' answers travel
  (`bencher_reply`, `prepare_reply`/`prepared_result`) and patches as JSON;
- `ssegrade.protocol._changes`: how git's list of the changed files reads (`changed_files`);
- `ssegrade.protocol._difficulty`: the difficulty levels, which bencher actions the agent may
  call before grading (`LEVELS`, `allowed`, `parse_difficulty`).
"""

from ssegrade.protocol._answers import (
    bencher_reply,
    decode_patch,
    encode_patch,
    prepare_reply,
    prepared_result,
)
from ssegrade.protocol._calls import parse_tool_call, unconfigured
from ssegrade.protocol._changes import changed_files
from ssegrade.protocol._difficulty import (
    ACTIONS,
    DEFAULT_LEVEL,
    LEVELS,
    Level,
    allowed,
    parse_difficulty,
)
from ssegrade.protocol._documents import (
    API_VERSION,
    PREFIX,
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
from ssegrade.protocol._rules import (
    ADMIN_ONLY,
    AGENT_PHASE_OVER,
    Refusal,
    capabilities,
    gate,
    public_project,
    refusal,
    resolve_poc,
    ssebench_refusal,
)
from ssegrade.protocol._wire import (
    I64_MAX,
    I64_MIN,
    WireCapabilities,
    WireDialog,
    WireDiff,
    WireFiles,
    WireMetadata,
    WireResult,
    WireScriptResult,
    WireSuccess,
    WireVersion,
    dialog_entries,
    wire_capabilities,
    wire_files,
    wire_metadata,
    wire_result,
    wire_script,
)

__all__ = [
    "ACTIONS",
    "ADMIN_ONLY",
    "AGENT_PHASE_OVER",
    "API_VERSION",
    "DEFAULT_LEVEL",
    "I64_MAX",
    "I64_MIN",
    "LEVELS",
    "PREFIX",
    "AgentExitedReply",
    "BencherRequest",
    "Capabilities",
    "ChangeKind",
    "ChangeStatus",
    "ChangedFile",
    "DiffText",
    "ErrorBody",
    "FilesReply",
    "Level",
    "Listener",
    "PrepareApplyFailed",
    "PrepareCaptureFailed",
    "PrepareReply",
    "PrepareSucceeded",
    "ProjectScripts",
    "ProjectView",
    "Refusal",
    "VersionReply",
    "WireCapabilities",
    "WireDialog",
    "WireDiff",
    "WireFiles",
    "WireMetadata",
    "WireResult",
    "WireScriptResult",
    "WireSuccess",
    "WireVersion",
    "allowed",
    "bencher_reply",
    "capabilities",
    "changed_files",
    "decode_patch",
    "dialog_entries",
    "encode_patch",
    "gate",
    "parse_difficulty",
    "parse_tool_call",
    "prepare_reply",
    "prepared_result",
    "public_project",
    "refusal",
    "resolve_poc",
    "ssebench_refusal",
    "unconfigured",
    "wire_capabilities",
    "wire_files",
    "wire_metadata",
    "wire_result",
    "wire_script",
]
