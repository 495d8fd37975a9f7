"""The daemon's HTTP app (SPEC §9): both APIs over a `Service`, errors, limits, OpenAPI.

Interpreter layer. One app per listener: the same routes everywhere, the listener's kind
(`agent` or `admin`) decides what a request may do. Two route sets share the service: SSEBench's
wire at the root (`routes_ssebench`), key for key as SSEBench's SDK, MCP server, evaluator and
entrypoint read it, and ssegrade's own API under `/ssegrade` (`routes_ssegrade`), which
ssegrade's client asks for. The OpenAPI document (`openapi_document`, published as
`docs/openapi.json`) is generated from the models of both. Every error is
`{"error": "<message>"}`.

A body is read by `_BodyLimit` before any route sees it, and refused with 413 as soon as it
passes `MAX_BODY` bytes.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException

from interpreters.daemon import routes_ssebench, routes_ssegrade
from interpreters.daemon.service import Refused, Service
from interpreters.daemon.workers import DEFAULT_WORKERS, Workers
from ssegrade.protocol import API_VERSION, Listener

__all__ = ["MAX_BODY", "create_app", "openapi_document"]

MAX_BODY = 1 << 20
"""The largest request body taken, in bytes; a larger one is refused with 413."""

_TITLE = "ssegrade daemon"
_DESCRIPTION = (
    "The task daemon of ssegrade: JSON over HTTP/1.1 on an agent-facing Unix socket (mode 0666, "
    "optionally also TCP on 127.0.0.1) and an admin socket (mode 0600). The same routes are "
    "served on every listener; what an agent-facing listener may do depends on the difficulty "
    "level and on the phase. The routes at the root are SSEBench's daemon API, key for key; "
    "the routes under `/ssegrade` are ssegrade's own, with its extra fields. Errors are "
    '`{"error": "<message>"}`.'
)


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


def create_app(
    service: Service | None, listener: Listener, workers: int = DEFAULT_WORKERS
) -> FastAPI:
    """The API app of one listener, with its `workers` threads for reads (`service` None: only
    to generate the OpenAPI document)."""
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
    app.state.workers = Workers(workers)
    app.include_router(routes_ssebench.router)
    app.include_router(routes_ssegrade.router)
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
