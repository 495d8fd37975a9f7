"""A daemon over fake systems, in process: the service, both APIs' apps and a client of each.

For the daemon's API tests (`tests/daemon/test_daemon_api.py`, ssegrade's API under `/ssegrade`;
`tests/daemon/test_daemon_wire.py`, SSEBench's wire at the root): `FakeBackend` is the service's
sessions (two `FakeWorld`s: the live tree's and grading's), its reads (answered from data) and
its shell, and records what it was asked. `SyncASGI` carries a synchronous client's requests
to an app in process.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import httpx
from fastapi import FastAPI
from returns.result import Failure, Result, Success

from interpreters.daemon.app import create_app
from interpreters.daemon.service import Service
from interpreters.daemon.shell import ShellError
from ssegrade.internal.bencher import task_path
from ssegrade.internal.effects import (
    Capture,
    CaptureError,
    CaptureTree,
    ChangedFiles,
    Effect,
    ReadArtifact,
    ReadDialog,
    ReadTaskFile,
    ScriptResult,
)
from ssegrade.internal.run import Interpreter
from ssegrade.internal.task import Task
from ssegrade.protocol import LEVELS, PREFIX, Level
from ssegrade.testing import FakeWorld

TASK = Task.model_validate(
    {
        "id": "demo-1",
        "project": "demo",
        "language": "c",
        "scripts": {"build": "build.sh", "run": "run.sh", "test": "test.sh"},
        "files": {
            "poc": ["pocs/a.bin", "pocs/b.bin"],
            "future_test": "hidden/future.diff",
            "patch": "secret/fix.diff",
        },
        "task_description": {"issue": "crash on a.bin", "crash_report": ["report.txt"]},
        "private_note": "not for the agent",
    }
)
FOLDER = "/ssebench"


@dataclass
class FakeBackend:
    """The service's sessions over two fake worlds, the agent phase's (live tree) and
    grading's; its reads from data (`texts` by config path, `reference`, `listing`,
    `dialog_file`; `broken`: the live tree cannot be read; `unreadable`: results files and
    the dialog that raise); and its shell."""

    live: FakeWorld = field(default_factory=FakeWorld)
    graded: FakeWorld = field(default_factory=FakeWorld)
    reference: bytes | None = b"diff --git a/x b/x\n"
    limits: list[float] = field(default_factory=list)
    begun: int = 0
    aborted: int = 0
    unreadable: set[str] = field(default_factory=set)
    listing: bytes = b""
    broken: bool = False
    texts: dict[str, str] = field(default_factory=dict)
    dialog_file: bytes | None = None
    commands: list[str] = field(default_factory=list)
    shell_closed: int = 0

    def ports(self) -> dict[str, Any]:
        """What a `Service` takes of it: its sessions, reads and shell."""
        return {"sessions": self, "reads": self, "shell": self}

    # sessions

    def agent(self, limit: float) -> Interpreter:
        self.limits.append(limit)
        return self.live

    def begin_grading(self) -> None:
        self.begun += 1

    def grading(self, limit: float) -> Interpreter:
        self.limits.append(limit)
        return self.graded

    def abort(self) -> None:
        self.aborted += 1

    # reads

    def __call__(self, effect: Effect[Any]) -> object:
        match effect:
            case CaptureTree():
                if self.broken:
                    return Failure(CaptureError("the live tree cannot be captured"))
                return Success(Capture(self.live.patch, "base", "new", b"", ()))
            case ChangedFiles():
                if self.broken:
                    return Failure(CaptureError("the live tree cannot be listed"))
                return Success(self.listing)
            case ReadArtifact(name=name):
                if name in self.unreadable:
                    raise PermissionError(f"cannot read {name}")
                return self.graded.artifacts.get(name)
            case ReadTaskFile(path=path, limit=limit):
                return self._task_file(path, limit)
            case ReadDialog():
                if "dialog.jsonl" in self.unreadable:
                    raise PermissionError("cannot read dialog.jsonl")
                return self.dialog_file
        raise TypeError(f"not a read of the daemon: {effect!r}")

    def _task_file(self, path: str, limit: int) -> Result[bytes, str]:
        if TASK.files.patch is not None and path == task_path(FOLDER, TASK.files.patch):
            found = self.reference
        else:
            text = self.texts.get(path.removeprefix(FOLDER + "/"))
            found = None if text is None else text.encode()
        return Failure(f"{path}: no such file") if found is None else Success(found[:limit])

    # shell

    def run(self, command: str, limit: float) -> ScriptResult:
        if self.shell_closed:
            raise ShellError("bash process has died")
        self.commands.append(command)
        return ScriptResult(code=0, stdout=f"ran {command}\n", seconds=0.5)

    def close(self) -> None:
        self.shell_closed += 1


class InProcess:
    """A synchronous client of an app in process (httpx's ASGI transport, one loop a call);
    every path is below `prefix` (ssegrade's API by default, "" for SSEBench's wire)."""

    def __init__(self, app: FastAPI, prefix: str = PREFIX) -> None:
        self.app = app
        self.prefix = prefix

    def request(self, method: str, path: str, **kwargs: object) -> httpx.Response:
        path = self.prefix + path

        async def send() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app, raise_app_exceptions=False)
            async with httpx.AsyncClient(transport=transport, base_url="http://daemon") as client:
                return await client.request(method, path, **kwargs)  # type: ignore[arg-type]

        return asyncio.run(send())

    def get(self, path: str, **kwargs: object) -> httpx.Response:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: object) -> httpx.Response:
        return self.request("POST", path, **kwargs)


@dataclass
class Api:
    """A service and one test client per listener."""

    service: Service
    backend: FakeBackend
    agent: InProcess
    admin: InProcess

    def client(self, listener: str) -> InProcess:
        return self.agent if listener == "agent" else self.admin


def make_api(
    level: Level = LEVELS[0], backend: FakeBackend | None = None, prefix: str = PREFIX
) -> Api:
    """A service over `backend` and a client of each listener, asking below `prefix`."""
    backend = backend or FakeBackend()
    service = Service(
        task=TASK,
        folder=FOLDER,
        level=level,
        **backend.ports(),
        version="9.9",
        script_timeout=60,
        source="/src/demo",
    )
    return Api(
        service,
        backend,
        InProcess(create_app(service, "agent"), prefix),
        InProcess(create_app(service, "admin"), prefix),
    )


class SyncASGI(httpx.BaseTransport):
    """A synchronous transport to an ASGI app: `httpx.ASGITransport`, one event loop a call."""

    def __init__(self, app: Any) -> None:
        self.inner = httpx.ASGITransport(app=app)

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Send `request` to the app and read the whole reply."""

        async def send() -> httpx.Response:
            reply = await self.inner.handle_async_request(request)
            body = await reply.aread()
            return httpx.Response(reply.status_code, headers=reply.headers, content=body)

        return asyncio.run(send())
