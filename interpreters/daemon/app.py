"""The daemon's HTTP API (SPEC §9): FastAPI routes over a `Service`, and its OpenAPI document.

Interpreter layer. One app per listener: the same routes everywhere, the listener's kind
(`agent` or `admin`) decides what a request may do. Request and reply bodies are the models of
`ssegrade.protocol`, so the OpenAPI document (`openapi_document`, published as `docs/openapi.json`)
is generated from them. Every error is `{"error": "<message>"}`: 400 for a request the API
cannot take (malformed body, unknown action, bad PoC), 403 for one it forbids, 404 for a document
that does not exist yet, 413 for a body over 1 MiB, 503 while the daemon stops, 500 when the
daemon itself failed.

The `Service` blocks (one action at a time), so each handler runs it in a worker thread drawn
from its listener's own small pool: requests queued on the agent-facing socket never take the
threads the admin socket needs. A body is read by `_BodyLimit` before any route sees it, and
refused with 413 as soon as it passes `MAX_BODY` bytes.
"""

from __future__ import annotations

import asyncio
import functools
import json
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

import anyio.to_thread
from anyio import CapacityLimiter
from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter
from starlette.exceptions import HTTPException

from interpreters.daemon.service import Refused, Service
from ssegrade.effects import Action, ScriptResult
from ssegrade.guard import GuardFacts
from ssegrade.protocol import (
    API_VERSION,
    AgentExitedReply,
    BencherRequest,
    Capabilities,
    DiffText,
    ErrorBody,
    FilesReply,
    Listener,
    PrepareReply,
    ProjectView,
    VersionReply,
)
from ssegrade.result import EvaluationResult

__all__ = ["MAX_BODY", "create_app", "openapi_document"]

MAX_BODY = 1 << 20
"""The largest request body taken, in bytes; a larger one is refused with 413."""

_THREADS = {"agent": 4, "admin": 8}
"""Worker threads per listener: an agent's queued requests wait for these, never the admin's."""

T = TypeVar("T")

_TITLE = "ssegrade daemon"
_DESCRIPTION = (
    "The task daemon of ssegrade: JSON over HTTP/1.1 on an agent-facing Unix socket (mode 0666, "
    "optionally also TCP on 127.0.0.1) and an admin socket (mode 0600). The same routes are "
    "served on every listener; what an agent-facing listener may do depends on the difficulty "
    'level and on the phase. Errors are `{"error": "<message>"}`.'
)


@dataclass(frozen=True, slots=True)
class _Asker:
    service: Service
    listener: Listener
    threads: CapacityLimiter

    async def call(self, work: Callable[..., T], *args: Any) -> T:
        """Run `work(*args)` in one of this listener's worker threads."""
        return await anyio.to_thread.run_sync(functools.partial(work, *args), limiter=self.threads)


async def _asker(request: Request) -> _Asker:
    service = request.app.state.service
    listener = request.app.state.listener
    if not isinstance(service, Service) or listener not in ("agent", "admin"):
        raise RuntimeError("the app was created without a service")
    # A limiter belongs to the event loop that uses it (tests run one loop per request).
    pools: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, CapacityLimiter]
    pools = request.app.state.threads
    loop = asyncio.get_running_loop()
    threads = pools.get(loop)
    if threads is None:
        threads = pools[loop] = CapacityLimiter(_THREADS[listener])
    return _Asker(service, listener, threads)


Asker = Annotated[_Asker, Depends(_asker)]


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    meaning = {
        400: "The request cannot be taken: malformed body, unknown action, bad PoC.",
        403: "Forbidden on this listener, at this difficulty level, or after the agent phase.",
        404: "The document does not exist (yet).",
        413: "The request body is larger than 1 MiB.",
        503: "The daemon is stopping.",
    }
    return {status: {"model": ErrorBody, "description": meaning[status]} for status in statuses}


router = APIRouter()


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


@router.get("/diff", response_model=DiffText, responses=_errors(403, 503))
async def get_diff(asker: Asker) -> DiffText:
    """The live tree's patch against the baseline, captured exactly as grading captures it.
    403 on an agent-facing listener after the agent phase (also for a request still waiting
    for its turn when the phase ends)."""
    return await asker.call(asker.service.diff, asker.listener)


@router.get("/files", response_model=FilesReply, responses=_errors(403, 503))
async def get_files(asker: Asker) -> FilesReply:
    """The paths the live patch changes, as git lists them: `status` (added, deleted,
    modified), line counts, and ssegrade's `kind` (added, deleted, modified, mode_changed,
    type_changed), modes and `binary`. 403 on an agent-facing listener after the agent
    phase."""
    return await asker.call(asker.service.files, asker.listener)


@router.get("/result", response_model=EvaluationResult, responses=_errors(404))
async def get_result(asker: Asker) -> Response:
    """The grade (`result.json`) once grading has written it, byte for byte; 404 before."""
    result = await asker.call(asker.service.result)
    return Response(result.to_json(), media_type="application/json")


@router.get("/final_diff", response_model=DiffText, responses=_errors(404))
async def get_final_diff(asker: Asker) -> DiffText:
    """The patch grading captured (`final.patch`); 404 before `POST /prepare_grading`."""
    return await asker.call(asker.service.final_diff)


@router.post("/tool/bencher", response_model=ScriptResult, responses=_errors(400, 403, 413, 503))
async def post_bencher(
    asker: Asker,
    action: Annotated[Action, Query(description="The bencher action to run.")],
    request: Annotated[BencherRequest | None, Body()] = None,
) -> ScriptResult:
    """Run one bencher action (one at a time). On an agent-facing listener: only during the
    agent phase, only the actions the difficulty level allows, never `grading: true` (403).
    `run_poc` takes a PoC the task names (400 otherwise) and answers code -1 before any build.
    A script's failure is a normal reply (`code` != 0)."""
    return await asker.call(
        asker.service.bencher, asker.listener, action, request or BencherRequest()
    )


@router.post("/prepare_grading", response_model=PrepareReply, responses=_errors(403, 503))
async def post_prepare_grading(asker: Asker) -> PrepareReply:
    """Admin only (403 elsewhere): start a fresh runner session, capture the patch, write
    `final.patch` and `commits.log`, apply it to the grading repo. A second call starts a fresh
    session again and answers the same outcome without applying twice."""
    return await asker.call(asker.service.prepare_grading, asker.listener)


@router.post("/admin/agent_exited", response_model=AgentExitedReply, responses=_errors(403))
async def post_agent_exited(asker: Asker) -> AgentExitedReply:
    """Admin only (403 elsewhere): end the agent phase; every agent-facing tool is refused
    from now on, agent requests still waiting for their turn included."""
    return await asker.call(asker.service.agent_exited, asker.listener)


@router.get("/reference/patch", response_model=DiffText, responses=_errors(403, 404))
async def get_reference_patch(asker: Asker) -> DiffText:
    """Admin only (403 elsewhere): the task's reference fix; 404 when the task has none."""
    return await asker.call(asker.service.reference_patch, asker.listener)


_FACTS = TypeAdapter(GuardFacts)


@router.post("/ssegrade/guard/observe", response_model=GuardFacts, responses=_errors(403, 404, 503))
async def post_guard_observe(asker: Asker) -> Response:
    """ssegrade's own, admin only (403 elsewhere): what the patch guard reads besides the
    patch, observed in the grading session after its checks: the PoC files (bytes in base64),
    the paths of the hidden test diff, and a scan of the build's objects for the task's
    sanitizer runtime. 404 before `POST /prepare_grading`."""
    facts = await asker.call(asker.service.observe_guard, asker.listener)
    return Response(_FACTS.dump_json(facts), media_type="application/json")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


def _refused(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, Refused)
    return _error(exc.status, exc.message)


def _invalid(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for error in exc.errors():
        where = ".".join(str(part) for part in error.get("loc", ()) if part != "body")
        problems.append(f"{where or 'body'}: {error.get('msg', 'invalid')}")
    return _error(400, "; ".join(problems) or "invalid request")


def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return _error(exc.status_code, str(exc.detail))


def _failed(_request: Request, exc: Exception) -> Response:
    return _error(500, f"internal error: {type(exc).__name__}: {exc}")


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class _BodyLimit:
    """ASGI middleware: reads the request body before the app, refusing it with 413 as soon as
    it passes `limit` bytes (at once when `Content-Length` says so); the app then reads the
    body from memory."""

    def __init__(self, app: ASGIApp, limit: int = MAX_BODY) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length" and (not value.isdigit() or int(value) > self.limit):
                await self._refuse(send)
                return
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > self.limit:
                await self._refuse(send)
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": b"".join(chunks), "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, send: Send) -> None:
        body = json.dumps({"error": f"request body over {self.limit} bytes"}).encode()
        headers = [(b"content-type", b"application/json"), (b"connection", b"close")]
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def create_app(service: Service | None, listener: Listener) -> FastAPI:
    """The API app of one listener (`service` None: only to generate the OpenAPI document)."""
    app = FastAPI(
        title=_TITLE,
        version=str(API_VERSION),
        description=_DESCRIPTION,
        openapi_url=None,
        docs_url=None,
        redoc_url=None,
    )
    app.state.service = service
    app.state.listener = listener
    app.state.threads = weakref.WeakKeyDictionary()  # a thread limiter per event loop
    app.include_router(router)
    app.add_middleware(_BodyLimit)
    app.add_exception_handler(Refused, _refused)
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(HTTPException, _http_error)
    app.add_exception_handler(Exception, _failed)
    return app


def openapi_document() -> dict[str, Any]:
    """The OpenAPI document of the API, generated from the models (`docs/openapi.json`).

    FastAPI's generic 422 replies are replaced by the API's own 400 `ErrorBody`.
    """
    document = create_app(None, "admin").openapi()
    for operations in document.get("paths", {}).values():
        for operation in operations.values():
            responses = operation.get("responses", {})
            if responses.pop("422", None) is not None and "400" not in responses:
                raise RuntimeError("a route that validates its input must document 400")
    schemas = document.get("components", {}).get("schemas", {})
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    return document
