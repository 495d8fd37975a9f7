"""SSEBench's daemon wire, at the root: the routes its SDK, MCP server, evaluator and entrypoint
call, with the original's paths, methods, bodies, statuses and reply keys (SPEC §9).

Interpreter layer: each route reads the request and hands it to `interpreters.daemon.ssebench`
in one of its listener's worker threads. The reply models (`ssegrade.protocol._wire`) hold
exactly the original's keys; the OpenAPI document is generated from them.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from fastapi.responses import JSONResponse

from interpreters.daemon import ssebench
from interpreters.daemon.asking import Asker, errors
from interpreters.daemon.service import Refused
from ssegrade.protocol import (
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
    wire_capabilities,
)

__all__ = ["router"]

router = APIRouter(tags=["SSEBench's wire"])

_TOOL_BODY = {
    "requestBody": {
        "required": True,
        "description": 'The action\'s argument: `{"grading": bool}` (build, function_test, '
        'intent_test), `{"poc": path}` (run_poc) or `{"command": text}` (bash).',
        "content": {"application/json": {"schema": {"type": "object"}}},
    }
}


@router.get("/version", response_model=WireVersion)
async def get_version(asker: Asker) -> WireVersion:
    """The daemon's version (ssegrade's)."""
    return WireVersion(version=asker.service.version)


@router.get("/project", response_model=WireMetadata)
async def get_project(asker: Asker) -> WireMetadata:
    """The task: the agent's source tree, the PoCs' absolute paths, the report files and the
    build and test scripts as text; never the reference patch nor the hidden tests."""
    return await asker.call(ssebench.metadata, asker.service)


@router.get("/capabilities", response_model=WireCapabilities)
async def get_capabilities(asker: Asker) -> WireCapabilities:
    """Which checks the task has (the level can still withhold them from the agent)."""
    return wire_capabilities(asker.service.task)


@router.post(
    "/tool/{name}",
    response_model=WireScriptResult,
    responses=errors(400, 403, 413, 500, 503),
    openapi_extra=_TOOL_BODY,
)
async def post_tool(
    asker: Asker,
    name: str,
    action: Annotated[str, Query(description="The action; `bash` takes any (`execute`).")],
    request: Request,
) -> WireScriptResult:
    """Run a tool's action: `bencher` (`build`, `run_poc`, `function_test`, `intent_test`)
    or `bash` (a command in the agent's persistent shell, as the agent's account). On an
    agent-facing listener: only during the agent phase, never `grading: true`, and only the
    bencher actions the level allows (403). A call that cannot run is a 500."""
    raw = await request.body()
    try:
        body: Any = json.loads(raw)
    except ValueError:
        raise Refused(400, "the body must be JSON: the action's argument") from None
    return await asker.act(ssebench.tool, asker.service, asker.listener, name, action, body)


@router.get("/diff", response_model=WireDiff, responses=errors(500, 503))
async def get_diff(asker: Asker) -> WireDiff:
    """The live tree's patch against the baseline, captured as grading captures it."""
    return await asker.act(ssebench.diff, asker.service, asker.listener)


@router.get("/files", response_model=WireFiles, responses=errors(500, 503))
async def get_files(asker: Asker) -> WireFiles:
    """The files the live patch changes, with their status and line counts."""
    return await asker.act(ssebench.files, asker.service, asker.listener)


@router.get("/agent/dialog", response_model=WireDialog, responses=errors(400, 500))
async def get_dialog(
    asker: Asker,
    since: Annotated[
        int | None,
        Query(description="Only the entries whose `seq` is above.", ge=I64_MIN, le=I64_MAX),
    ] = None,
) -> WireDialog:
    """The dialog entries the agent side wrote in `$SSE_ARCHIVE/dialog.jsonl`."""
    return await asker.call(ssebench.dialog, asker.service, since)


@router.get("/result", response_model=WireResult, responses=errors(500))
async def get_result(asker: Asker) -> JSONResponse:
    """The grade once it can be read; `{"available": false}` before."""
    return JSONResponse(await asker.call(ssebench.result, asker.service))


@router.post("/prepare_grading", response_model=WireSuccess, responses=errors(403, 500, 503))
async def post_prepare_grading(asker: Asker) -> WireSuccess:
    """Admin only: a fresh runner session, capture, `final.patch` and `commits.log`, and the
    patch checked against the grading repo; 500 `git apply failed: …` when it does not apply."""
    return await asker.act(ssebench.prepare_grading, asker.service, asker.listener)


@router.get("/final_diff", response_model=WireDiff, responses=errors(500))
async def get_final_diff(asker: Asker) -> WireDiff:
    """The patch `POST /prepare_grading` saved; empty before."""
    return await asker.call(ssebench.final_diff, asker.service)


@router.post("/admin/agent_exited", response_model=WireSuccess, responses=errors(403))
async def post_agent_exited(asker: Asker) -> WireSuccess:
    """Admin only: end the agent phase (agent-facing tools refused from now on, the agent's
    shell killed)."""
    return await asker.act(ssebench.agent_exited, asker.service, asker.listener)


@router.get("/reference/patch", response_model=WireDiff, responses=errors(403))
async def get_reference_patch(asker: Asker) -> WireDiff:
    """The task's reference fix, empty when it has none: on the admin socket, and on the
    agent-facing listeners once the agent phase is over (403 before)."""
    return await asker.call(ssebench.reference_patch, asker.service, asker.listener)
