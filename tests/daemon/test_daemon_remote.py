"""`RemoteGrading` in process: the grading program through `DaemonClient(transport=…)`.

Against the daemon's own app (served in process over a fake system) the grade must equal the
embedded one; against a daemon that answers badly (`httpx.MockTransport`) grading ends as an
`error` grade, written like any other.
"""

from __future__ import annotations

import time
from collections.abc import Coroutine
from typing import Any

import httpx
import pytest

from interpreters.daemon.app import create_app
from interpreters.daemon.client import DaemonClient
from interpreters.daemon.remote import RemoteGrading
from interpreters.daemon.service import Service
from ssegrade.internal.program import GradeOptions, grade
from ssegrade.internal.result import EvaluationResult
from ssegrade.internal.run import Deadline, run
from ssegrade.protocol import LEVELS
from ssegrade.testing import FakeWorld, Script
from tests.support.fakedaemon import FOLDER, TASK, FakeBackend, SyncASGI


def _world(**scripts: Script) -> FakeWorld:
    return FakeWorld(patch=b"diff --git a/x b/x\n", scripts=dict(scripts))


SCENARIOS = {
    "all pass": {},
    "build fails": {"build": Script(2, "", "no compiler")},
    "second poc triggers": {"poc-2": Script(1, "", "crash")},
    "intent tests fail": {"intent_test": Script(1, "", "assertion")},
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_remote_grade_equals_the_embedded_one(name: str) -> None:
    alone = _world(**SCENARIOS[name])
    embedded = alone.grade(TASK, FOLDER)
    backend = FakeBackend(graded=_world(**SCENARIOS[name]))
    service = Service(
        task=TASK, folder=FOLDER, level=LEVELS[2], **backend.ports(), version="1", script_timeout=60
    )
    local = FakeWorld()
    client = DaemonClient("in-process", transport=SyncASGI(create_app(service, "admin")))
    with client:
        remote = run(
            grade(GradeOptions(task=TASK, folder=FOLDER)), RemoteGrading(client, local, _hour())
        )
    assert remote == embedded
    assert local.result == remote  # written by the local side
    assert backend.graded.script_labels() == alone.script_labels()  # the same scripts ran
    assert local.checks == alone.checks


def _daemon(bencher: httpx.Response) -> httpx.MockTransport:
    """A daemon that prepares fine and answers every bencher call with `bencher`."""

    def answer(request: httpx.Request) -> httpx.Response:
        if request.url.path == "/ssegrade/prepare_grading":
            return httpx.Response(
                200, json={"outcome": "prepared", "empty": False, "patch_bytes": 9}
            )
        if request.url.path == "/ssegrade/tool/bencher":
            return bencher
        return httpx.Response(404, json={"error": "Not Found"})

    return httpx.MockTransport(answer)


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (httpx.Response(500, json={"error": "internal error: boom"}), "500: internal error: boom"),
        (httpx.Response(200, json={"code": "zero"}), "unreadable reply"),
        (httpx.Response(503, text="<html>busy</html>"), "503: <html>busy</html>"),
    ],
)
def test_a_daemon_that_answers_badly_gives_an_error_grade(reply: httpx.Response, why: str) -> None:
    local = FakeWorld()
    with DaemonClient("mock", transport=_daemon(reply)) as client:
        result = run(
            grade(GradeOptions(task=TASK, folder=FOLDER)), RemoteGrading(client, local, _hour())
        )
    assert result.patch_result.status == "error"
    assert local.result == result
    assert why in (result.patch_result.error_log or "") + (result.patch_result.error_msg or "")


def test_the_mock_daemon_sees_the_original_field_names() -> None:
    seen: list[bytes] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(request.content)
        return httpx.Response(200, json={"code": 0, "stdout": "ok", "stderr": ""})

    with DaemonClient("mock", transport=httpx.MockTransport(answer)) as client:
        reply = client.bencher("run_poc", poc="pocs/a.bin", grading=True)
    assert (reply.code, reply.stdout, reply.stderr) == (0, "ok", "")
    assert seen == [b'{"grading":true,"poc":"pocs/a.bin","limit":null}']


def _graded() -> Coroutine[Any, Any, EvaluationResult]:
    return grade(GradeOptions(task=TASK, folder=FOLDER))


def _hour() -> Deadline:
    return Deadline.starting(3600, time.monotonic)
