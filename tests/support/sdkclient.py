"""SSEBench's SDK as its clients call a daemon: `SdkClient` sends what SSEBench's Python SDK
sends (a JSON body on every POST, the error body's `error` raised) and loads replies as the SDK
does (`Class(**data)`); `grade_like_ssebench` walks the grading steps of SSEBench's evaluator
as its SDK does them (prepare, then build, every PoC by path alone, functional and intent
tests, a `git apply failed` error read as a failed step).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx

from ssegrade.internal.result import status_of
from tests.support.ssebench_wire import Capabilities, ScriptResult


class SdkError(Exception):
    """An error reply, as the SDK raises it: the body's `error`."""


@dataclass
class SdkClient:
    """One socket, spoken to as SSEBench's SDK speaks."""

    http: httpx.Client

    def get(self, path: str) -> Any:
        return self._answer(self.http.get(path))

    def post(self, path: str, body: object) -> Any:
        return self._answer(self.http.post(path, json=body))

    def tool(self, name: str, action: str, body: object) -> ScriptResult:
        return ScriptResult(**self.post(f"/tool/{name}?action={action}", body))

    @staticmethod
    def _answer(reply: httpx.Response) -> Any:
        data = reply.json()
        if reply.status_code >= 400:
            raise SdkError(data.get("error", "unknown error"))
        return data


def grade_like_ssebench(admin: SdkClient) -> dict[str, Any]:
    """The grade SSEBench's evaluator makes through its SDK over the admin socket."""
    caps = Capabilities(**admin.get("/capabilities"))
    pocs = admin.get("/project")["poc"]
    grade: dict[str, Any] = dict.fromkeys(
        ("build_success", "pov_passed", "pov_total", "func_test_success", "intent_test_success")
    )
    first: list[str] = []

    def failed(message: str) -> None:
        if not first:
            first.append(message)

    try:
        admin.post("/prepare_grading", {})
    except SdkError as exc:
        if not str(exc).startswith("git apply failed"):
            raise
        failed("Patch apply failed")
        grade.update(build_success=False, func_test_success=False, intent_test_success=False)
        return _finish(grade, first)
    if caps.can_build:
        build = admin.tool("bencher", "build", {"grading": True})
        grade["build_success"] = build.code == 0
        if build.code != 0:
            failed("Build failed")
            return _finish(grade, first)
    if caps.can_run_poc:
        grade.update(pov_total=len(pocs), pov_passed=0)
        for poc in pocs:
            if admin.tool("bencher", "run_poc", {"poc": poc}).code == 0:
                grade["pov_passed"] += 1
            else:
                failed(f"PoC failed: {poc}")
    if caps.has_function_test:
        tested = admin.tool("bencher", "function_test", {"grading": True})
        grade["func_test_success"] = tested.code == 0
        if tested.code != 0:
            failed("Function test failed")
    if caps.has_intent_test:
        try:
            code = admin.tool("bencher", "intent_test", {"grading": True}).code
        except SdkError as exc:
            if not str(exc).startswith("git apply failed"):
                raise
            code = 1
        grade["intent_test_success"] = code == 0
        if code != 0:
            failed("Intent test failed")
    return _finish(grade, first)


def _finish(grade: dict[str, Any], first: list[str]) -> dict[str, Any]:
    grade["status"] = status_of(**grade)
    grade["error_msg"] = first[0] if first else None
    return grade
