"""An httpx client of ssegrade's daemon API over a Unix socket (or TCP), speaking
`ssegrade.protocol`.

Interpreter layer. It asks for ssegrade's own API, under `/ssegrade` (`PREFIX`), whose replies
carry ssegrade's fields (durations, kills, log files, outcomes); SSEBench's wire at the root is
for SSEBench's clients. Every reply is validated into its model; an error reply, a broken
connection or an unreadable body raises `DaemonError` with one line that says which request
failed.
"""

from __future__ import annotations

from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import httpx
from pydantic import BaseModel, TypeAdapter, ValidationError

from ssegrade.guard import GuardFacts
from ssegrade.internal.effects import Action, ScriptResult
from ssegrade.internal.errors import SsegradeError
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

__all__ = ["DaemonClient", "DaemonError"]

M = TypeVar("M", bound=BaseModel)

_PREPARE = TypeAdapter[Any](PrepareReply)
_SCRIPT = TypeAdapter(ScriptResult)
_FACTS = TypeAdapter(GuardFacts)


class DaemonError(SsegradeError):
    """A daemon request that failed; `status` is the HTTP status when there was a reply."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class DaemonClient:
    """A client of one daemon listener: a Unix socket path, or an `http://host:port` URL.

    `transport` (an httpx transport) replaces the connection to `where`, which then only names
    the daemon in messages: tests serve the API in process (`httpx.MockTransport`, or an ASGI
    app behind a synchronous transport).
    """

    def __init__(
        self,
        where: str | Path,
        *,
        timeout: float | None = 30.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        text = str(where)
        url = text if text.startswith(("http://", "https://")) else "http://ssegrade-daemon"
        if transport is None and url == "http://ssegrade-daemon":
            transport = httpx.HTTPTransport(uds=text)
        self._client = httpx.Client(transport=transport, base_url=url, timeout=timeout)
        self.where = text

    def __enter__(self) -> DaemonClient:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, str] | None = None,
        json: Any = None,
        timeout: httpx.Timeout | None = None,
    ) -> httpx.Response:
        """Send one request to ssegrade's API (`path` below `/ssegrade`); an error status or a
        transport failure raises `DaemonError`.

        `timeout` replaces the client's for this request (`httpx.Timeout(None)`: no limit).
        """
        what = f"{method} {path}"
        try:
            reply = self._client.request(
                method,
                PREFIX + path,
                params=params,
                json=json,
                timeout=timeout or self._client.timeout,
            )
        except httpx.TimeoutException as exc:
            raise DaemonError(f"{what}: no reply from the daemon at {self.where} in time") from exc
        except httpx.HTTPError as exc:
            raise DaemonError(f"{what}: cannot reach the daemon at {self.where}: {exc}") from exc
        if reply.status_code >= 400:
            raise DaemonError(f"{what}: {reply.status_code}: {_message(reply)}", reply.status_code)
        return reply

    def _get(self, path: str, model: type[M]) -> M:
        return _parse(self.request("GET", path), model)

    def version(self) -> VersionReply:
        """`GET /version`."""
        return self._get("/version", VersionReply)

    def project(self) -> ProjectView:
        """`GET /project`."""
        return self._get("/project", ProjectView)

    def capabilities(self) -> Capabilities:
        """`GET /capabilities`."""
        return self._get("/capabilities", Capabilities)

    def diff(self) -> DiffText:
        """`GET /diff`."""
        return self._get("/diff", DiffText)

    def files(self) -> FilesReply:
        """`GET /files`."""
        return self._get("/files", FilesReply)

    def final_diff(self) -> DiffText:
        """`GET /final_diff`."""
        return self._get("/final_diff", DiffText)

    def reference_patch(self) -> DiffText:
        """`GET /reference/patch`."""
        return self._get("/reference/patch", DiffText)

    def result(self) -> EvaluationResult:
        """`GET /result`."""
        return self._get("/result", EvaluationResult)

    def bencher(
        self,
        action: Action,
        *,
        grading: bool = False,
        poc: str | None = None,
        limit: float | None = None,
        timeout: float | None = None,
    ) -> ScriptResult:
        """`POST /tool/bencher?action=…`; `timeout` bounds the wait for the reply (None: none)."""
        body = BencherRequest(grading=grading, poc=poc, limit=limit)
        reply = self.request(
            "POST",
            "/tool/bencher",
            params={"action": action},
            json=body.model_dump(),
            timeout=httpx.Timeout(timeout),
        )
        try:
            return _SCRIPT.validate_json(reply.content)
        except ValidationError as exc:
            raise _unreadable(reply, exc) from exc

    def prepare_grading(self, *, timeout: float | None = None) -> PrepareReply:
        """`POST /prepare_grading`."""
        reply = self.request("POST", "/prepare_grading", timeout=httpx.Timeout(timeout))
        try:
            parsed: PrepareReply = _PREPARE.validate_json(reply.content)
        except ValidationError as exc:
            raise DaemonError(f"POST /prepare_grading: unreadable reply: {exc}") from exc
        return parsed

    def observe_guard(self, *, timeout: float | None = None) -> GuardFacts:
        """`POST /guard/observe` (admin socket)."""
        reply = self.request("POST", "/guard/observe", timeout=httpx.Timeout(timeout))
        try:
            return _FACTS.validate_json(reply.content)
        except ValidationError as exc:
            raise _unreadable(reply, exc) from exc

    def agent_exited(self) -> AgentExitedReply:
        """`POST /admin/agent_exited`."""
        return _parse(self.request("POST", "/admin/agent_exited"), AgentExitedReply)


def _message(reply: httpx.Response) -> str:
    try:
        body = reply.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        return str(body["error"])
    return reply.text.strip()[:200] or reply.reason_phrase


def _parse(reply: httpx.Response, model: type[M]) -> M:
    try:
        return model.model_validate_json(reply.content)
    except ValidationError as exc:
        raise _unreadable(reply, exc) from exc


def _unreadable(reply: httpx.Response, exc: ValidationError) -> DaemonError:
    first = exc.errors()[0]
    where = ".".join(str(part) for part in first["loc"])
    return DaemonError(
        f"{reply.request.method} {reply.request.url.path}: unreadable reply"
        f" ({where}: {first['msg']})"
    )
