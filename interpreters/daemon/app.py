"""The daemon's HTTP API (SPEC §9): FastAPI routes over a `Service`, and its OpenAPI document.

Interpreter layer. One app per listener: the same routes everywhere, the listener's kind
(`agent` or `admin`) decides what a request may do. Request and reply bodies are the models of
`ssegrade.protocol`, so the OpenAPI document (`openapi_document`, published as `docs/openapi.json`)
is generated from them. Every error is `{"error": "<message>"}`: 400 for a request the API
cannot take (malformed body, unknown action, bad PoC), 403 for one it forbids, 404 for a document
that does not exist yet, 503 while the daemon stops, 500 when the daemon itself failed.

Handlers are plain functions: FastAPI runs them in worker threads, and `Service` serialises the
work.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from interpreters.daemon.service import Refused, Service
from ssegrade.protocol import (
    API_VERSION,
    AgentExitedReply,
    BencherReply,
    BencherRequest,
    Capabilities,
    ErrorBody,
    FilesReply,
    Listener,
    PatchText,
    PrepareReply,
    ProjectView,
    VersionReply,
)
from ssegrade.effects import Action
from ssegrade.result import EvaluationResult

__all__ = ["create_app", "openapi_document"]

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


def _asker(request: Request) -> _Asker:
    service = request.app.state.service
    listener = request.app.state.listener
    if not isinstance(service, Service) or listener not in ("agent", "admin"):
        raise RuntimeError("the app was created without a service")
    return _Asker(service, listener)


Asker = Annotated[_Asker, Depends(_asker)]


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    meaning = {
        400: "The request cannot be taken: malformed body, unknown action, bad PoC.",
        403: "Forbidden on this listener, at this difficulty level, or after the agent phase.",
        404: "The document does not exist (yet).",
        503: "The daemon is stopping.",
    }
    return {status: {"model": ErrorBody, "description": meaning[status]} for status in statuses}


router = APIRouter()


@router.get("/version", response_model=VersionReply)
def get_version(asker: Asker) -> VersionReply:
    """The daemon's version and API version."""
    return asker.service.version_info()


@router.get("/project", response_model=ProjectView)
def get_project(asker: Asker) -> ProjectView:
    """The public view of the task's `config.yaml`: never the reference patch nor the hidden
    tests."""
    return asker.service.project()


@router.get("/capabilities", response_model=Capabilities)
def get_capabilities(asker: Asker) -> Capabilities:
    """The difficulty level, the actions this listener may call now, the task's checks and
    PoCs."""
    return asker.service.capabilities(asker.listener)


@router.get("/diff", response_model=PatchText, responses=_errors(403))
def get_diff(asker: Asker) -> PatchText:
    """The live tree's patch against the baseline, captured exactly as grading captures it.
    403 on an agent-facing listener after the agent phase."""
    return asker.service.diff(asker.listener)


@router.get("/files", response_model=FilesReply, responses=_errors(403))
def get_files(asker: Asker) -> FilesReply:
    """The paths the live patch changes, with how (added, deleted, modified, mode_changed,
    type_changed). 403 on an agent-facing listener after the agent phase."""
    return asker.service.files(asker.listener)


@router.get("/result", response_model=EvaluationResult, responses=_errors(404))
def get_result(asker: Asker) -> Response:
    """The grade (`result.json`) once grading has written it, byte for byte; 404 before."""
    return Response(asker.service.result().to_json(), media_type="application/json")


@router.get("/final_diff", response_model=PatchText, responses=_errors(404))
def get_final_diff(asker: Asker) -> PatchText:
    """The patch grading captured (`final.patch`); 404 before `POST /prepare_grading`."""
    return asker.service.final_diff()


@router.post("/tool/bencher", response_model=BencherReply, responses=_errors(400, 403, 503))
def post_bencher(
    asker: Asker,
    action: Annotated[Action, Query(description="The bencher action to run.")],
    request: Annotated[BencherRequest | None, Body()] = None,
) -> BencherReply:
    """Run one bencher action (one at a time). On an agent-facing listener: only during the
    agent phase, only the actions the difficulty level allows, never `grading: true` (403).
    `run_poc` takes a PoC the task names (400 otherwise) and answers code -1 before any build.
    A script's failure is a normal reply (`code` != 0)."""
    return asker.service.bencher(asker.listener, action, request or BencherRequest())


@router.post("/prepare_grading", response_model=PrepareReply, responses=_errors(403))
def post_prepare_grading(asker: Asker) -> PrepareReply:
    """Admin only (403 elsewhere): start a fresh runner session, capture the patch, write
    `final.patch` and `commits.log`, apply it to the grading repo. A second call starts a fresh
    session again and answers the same outcome without applying twice."""
    return asker.service.prepare_grading(asker.listener)


@router.post("/admin/agent_exited", response_model=AgentExitedReply, responses=_errors(403))
def post_agent_exited(asker: Asker) -> AgentExitedReply:
    """Admin only (403 elsewhere): end the agent phase; every agent-facing tool is refused
    from now on."""
    return asker.service.agent_exited(asker.listener)


@router.get("/reference/patch", response_model=PatchText, responses=_errors(403, 404))
def get_reference_patch(asker: Asker) -> PatchText:
    """Admin only (403 elsewhere): the task's reference fix; 404 when the task has none."""
    return asker.service.reference_patch(asker.listener)


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
    app.include_router(router)
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
