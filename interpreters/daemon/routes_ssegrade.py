"""ssegrade's own daemon API, under `/ssegrade`: what ssegrade's client (`evaluate --daemon`,
`test-patch`) reads, with ssegrade's fields (durations, kills, log files, outcomes).

Interpreter layer. SSEBench's clients never call these routes (their replies would break
them); SSEBench's wire is `interpreters.daemon.routes_ssebench`. Request and reply bodies are
the models of `ssegrade.protocol._documents`, so the OpenAPI document is generated from them.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Query
from fastapi.responses import Response
from pydantic import TypeAdapter

from interpreters.daemon.asking import Asker, errors
from ssegrade.guard import GuardFacts
from ssegrade.internal.effects import Action, ScriptResult
from ssegrade.internal.result import EvaluationResult
from ssegrade.protocol import (
    PREFIX,
    AgentExitedReply,
    BencherRequest,
    Capabilities,
    DiffText,
    FilesReply,
    PrepareReply,
    ProjectView,
    VersionReply,
)

__all__ = ["router"]

router = APIRouter(prefix=PREFIX, tags=["ssegrade's API"])


@router.get("/version", response_model=VersionReply)
async def get_version(asker: Asker) -> VersionReply:
    """The daemon's version and API version."""
    return asker.service.version_info()


@router.get("/project", response_model=ProjectView)
async def get_project(asker: Asker) -> ProjectView:
    """The public view of the task's `config.yaml`: never the reference patch nor the hidden
    tests."""
    return asker.service.project()


@router.get("/capabilities", response_model=Capabilities)
async def get_capabilities(asker: Asker) -> Capabilities:
    """What the task has (`can_build`, `can_run_poc`, `poc_count`, `has_function_test`,
    `has_intent_test`), the difficulty level, the actions this listener may call now, the
    task's checks and PoCs."""
    return asker.service.capabilities(asker.listener)


@router.get("/diff", response_model=DiffText, responses=errors(500, 503))
async def get_diff(asker: Asker) -> DiffText:
    """The live tree's patch against the baseline, captured exactly as grading captures it,
    with its exact bytes in `base64` when they are not all UTF-8."""
    return await asker.act(asker.service.diff, asker.listener)


@router.get("/files", response_model=FilesReply, responses=errors(500, 503))
async def get_files(asker: Asker) -> FilesReply:
    """The paths the live patch changes, as git lists them: `status` (added, deleted,
    modified), line counts, and ssegrade's `kind` (added, deleted, modified, mode_changed,
    type_changed), modes and `binary`."""
    return await asker.act(asker.service.files, asker.listener)


@router.get("/result", response_model=EvaluationResult, responses=errors(404))
async def get_result(asker: Asker) -> Response:
    """The grade (`result.json`) once grading has written it, byte for byte; 404 before."""
    result = await asker.call(asker.service.result)
    return Response(result.to_json(), media_type="application/json")


@router.get("/final_diff", response_model=DiffText, responses=errors(404))
async def get_final_diff(asker: Asker) -> DiffText:
    """The patch grading captured (`final.patch`); 404 before `POST /prepare_grading`."""
    return await asker.call(asker.service.final_diff)


@router.post("/tool/bencher", response_model=ScriptResult, responses=errors(400, 403, 413, 503))
async def post_bencher(
    asker: Asker,
    action: Annotated[Action, Query(description="The bencher action to run.")],
    request: Annotated[BencherRequest | None, Body()] = None,
) -> ScriptResult:
    """Run one bencher action (one at a time). On an agent-facing listener: only during the
    agent phase, only the actions the difficulty level allows, never `grading: true` (403).
    On the admin socket, once grading is prepared, every call runs in the grading session.
    `run_poc` takes a PoC the task names (400 otherwise) and answers code -1 before any build.
    A script's failure is a normal reply (`code` != 0)."""
    return await asker.act(
        asker.service.bencher, asker.listener, action, request or BencherRequest()
    )


@router.post("/prepare_grading", response_model=PrepareReply, responses=errors(403, 503))
async def post_prepare_grading(asker: Asker) -> PrepareReply:
    """Admin only (403 elsewhere): start a fresh runner session, capture the patch, write
    `final.patch` and `commits.log`, apply it to the grading repo. A second call starts a fresh
    session again and answers the same outcome without applying twice."""
    return await asker.act(asker.service.prepare_grading, asker.listener)


@router.post("/admin/agent_exited", response_model=AgentExitedReply, responses=errors(403))
async def post_agent_exited(asker: Asker) -> AgentExitedReply:
    """Admin only (403 elsewhere): end the agent phase; every agent-facing tool is refused
    from now on, agent requests still waiting for their turn included."""
    return await asker.act(asker.service.agent_exited, asker.listener)


@router.get("/reference/patch", response_model=DiffText, responses=errors(403, 404))
async def get_reference_patch(asker: Asker) -> DiffText:
    """The task's reference fix (404 when the task has none): on the admin socket, and on
    the agent-facing listeners once the agent phase is over (403 before)."""
    return await asker.call(asker.service.reference_patch, asker.listener)


_FACTS = TypeAdapter(GuardFacts)


@router.post("/guard/observe", response_model=GuardFacts, responses=errors(403, 404, 503))
async def post_guard_observe(asker: Asker) -> Response:
    """Admin only (403 elsewhere): what the patch guard reads besides the patch, observed in
    the grading session after its checks: the PoC files (bytes in base64), the paths of the
    hidden test diff, and a scan of the build's objects for the task's sanitizer runtime. 404
    before `POST /prepare_grading`."""
    facts = await asker.act(asker.service.observe_guard, asker.listener)
    return Response(_FACTS.dump_json(facts), media_type="application/json")
