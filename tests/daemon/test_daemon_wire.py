"""SSEBench's wire, in process: each root route against the shapes SSEBench's own clients read.

The field lists (`tests/support/ssebench_wire.py`) are written from SSEBench's Python SDK and from
its daemon's reply types: a reply with one key more or one key less fails. So do the 403 texts of
its gate, its 500s for calls that cannot run, and the grading session's routing of the
evaluator's calls. The same replies are then loaded the way the SDK loads them (dacite's
strict mode, `Class(**data)`), with the dataclasses rebuilt from those field lists.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from ssegrade.internal.task import Task
from ssegrade.protocol import ACTIONS, LEVELS
from ssegrade.testing import Script
from tests.support.fakedaemon import Api, FakeBackend, make_api
from tests.support.ssebench_wire import (
    CAPABILITIES,
    CHANGED_FILE,
    DIALOG,
    DIFF,
    ERROR,
    FILES,
    METADATA,
    PATCH_RESULT,
    REFERENCE_LOCKED,
    RESULT,
    RUNTIME_RESULT,
    SCRIPT_RESULT,
    SUCCESS,
    TASK_DESCRIPTION,
    VERSION,
    Capabilities,
    Metadata,
    ScriptResult,
    TaskDescription,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


PHASE_OVER = "tools are unavailable after the agent phase"
GRADING_ONLY = "grading checks are only available on the admin socket"
ADMIN_ONLY = "endpoint is only available on the admin socket"


def withheld(action: str) -> str:
    return f"action '{action}' is not available at the current difficulty level"


@pytest.fixture
def wire() -> Api:
    made = make_api(LEVELS[0], prefix="")
    made.backend.texts = {"build.sh": "#!/bin/sh\nmake\n", "report.txt": "ASan report"}
    return made


def tool(made: Api, listener: str, name: str, action: str, body: object) -> tuple[int, Any]:
    reply = made.client(listener).post(f"/tool/{name}", params={"action": action}, json=body)
    return reply.status_code, reply.json()


def keys(doc: object) -> set[str]:
    assert isinstance(doc, dict), doc
    return set(doc)


# ---------------------------------------------------------------------------- shapes


def test_version_project_capabilities_have_the_sdk_fields(wire: Api) -> None:
    for listener in ("agent", "admin"):
        client = wire.client(listener)
        assert keys(client.get("/version").json()) == VERSION
        meta = client.get("/project").json()
        assert keys(meta) == METADATA
        assert keys(meta["task_description"]) == TASK_DESCRIPTION
        assert keys(client.get("/capabilities").json()) == CAPABILITIES
    meta = wire.agent.get("/project").json()
    assert meta["source"] == "/src/demo"
    assert meta["poc"] == ["/ssebench/pocs/a.bin", "/ssebench/pocs/b.bin"]
    assert meta["task_description"]["crash_report"] == ["ASan report"]
    assert meta["build_script"] == "#!/bin/sh\nmake\n"
    assert meta["test_script"] == ""  # unreadable: empty text, as the original reads it
    assert "fix.diff" not in json.dumps(meta)
    assert "future" not in json.dumps(meta)
    assert wire.agent.get("/capabilities").json() == {
        "can_build": True,
        "can_run_poc": True,
        "poc_count": 2,
        "has_function_test": True,
        "has_intent_test": True,
    }


def test_bencher_replies_have_code_stdout_stderr_only(wire: Api) -> None:
    wire.backend.live.scripts["build"] = Script(code=2, stdout="out", stderr="err")
    for listener in ("agent", "admin"):
        status, body = tool(wire, listener, "bencher", "build", {"grading": False})
        assert (status, keys(body)) == (200, SCRIPT_RESULT)
        assert body == {"code": 2, "stdout": "out", "stderr": "err"}
    status, body = tool(wire, "agent", "bencher", "run_poc", {"poc": "/ssebench/pocs/a.bin"})
    assert (status, keys(body)) == (200, SCRIPT_RESULT)


def test_diff_files_final_diff_and_reference_patch_shapes(wire: Api) -> None:
    wire.backend.live.patch = b"diff --git a/x b/x\n\xff\n"
    wire.backend.listing = (
        b":100644 100644 " + b"1" * 40 + b" " + b"2" * 40 + b" M\0x\0" + b"1\t1\tx\0"
    )
    diff = wire.agent.get("/diff").json()
    assert keys(diff) == DIFF
    assert diff["diff"] == "diff --git a/x b/x\n\ufffd\n"
    files = wire.agent.get("/files").json()
    assert keys(files) == FILES
    assert [keys(f) for f in files["files"]] == [CHANGED_FILE]
    assert files["files"][0] == {"path": "x", "status": "modified", "additions": 1, "deletions": 1}
    assert wire.agent.get("/final_diff").json() == {"diff": ""}  # before grading
    assert wire.admin.get("/reference/patch").json() == {"diff": "diff --git a/x b/x\n"}
    wire.backend.reference = None
    assert wire.admin.get("/reference/patch").json() == {"diff": ""}
    reply = wire.agent.get("/reference/patch")
    assert (reply.status_code, reply.json()) == (403, {"error": REFERENCE_LOCKED})


def test_result_is_unavailable_then_the_grade_with_the_original_keys(wire: Api) -> None:
    reply = wire.agent.get("/result")
    assert (reply.status_code, reply.json()) == (200, {"available": False})
    wire.backend.graded.artifacts["result.json"] = b"  \n"
    assert wire.agent.get("/result").json() == {"available": False}
    grade: dict[str, dict[str, Any]] = {
        "patch_result": {
            "status": "failed",
            "build_success": True,
            "pov_passed": 0,
            "pov_total": 2,
            "func_test_success": True,
            "intent_test_success": None,
            "error_msg": "PoC failed: /ssebench/pocs/a.bin",
            "error_log": "boom",
        },
        "runtime_result": {
            "agent_duration": 3,
            "agent_timeout": False,
            "evaluator_timeout": False,
            "agent_exit_code": 0,
        },
        "config": {"agent": "a"},
    }
    wire.backend.graded.artifacts["result.json"] = json.dumps(grade).encode()
    doc = wire.agent.get("/result").json()
    assert keys(doc) == RESULT
    assert doc["available"] is True
    assert keys(doc["patch_result"]) == PATCH_RESULT
    assert keys(doc["runtime_result"]) == RUNTIME_RESULT
    assert doc["patch_result"] == grade["patch_result"]
    del grade["patch_result"]["status"]  # an older grade: served without a status
    wire.backend.graded.artifacts["result.json"] = json.dumps(grade).encode()
    assert keys(wire.agent.get("/result").json()["patch_result"]) == PATCH_RESULT - {"status"}
    wire.backend.graded.artifacts["result.json"] = b'{"patch_result": {}}'
    assert wire.agent.get("/result").json() == {"available": False}


def test_prepare_grading_and_agent_exited_answer_success(wire: Api) -> None:
    wire.backend.live.patch = b"diff --git a/x b/x\n"
    wire.backend.graded.patch = b"diff --git a/x b/x\n"
    reply = wire.admin.post("/prepare_grading", json={})
    assert (reply.status_code, reply.json()) == (200, {"success": True})
    assert wire.agent.get("/final_diff").json() == {"diff": "diff --git a/x b/x\n"}
    for path in ("/prepare_grading", "/admin/agent_exited"):
        reply = wire.agent.post(path, json={})
        assert (reply.status_code, reply.json()) == (403, {"error": ADMIN_ONLY})
    reply = wire.admin.post("/admin/agent_exited", json={})
    assert (reply.status_code, reply.json()) == (200, {"success": True})
    assert keys(wire.admin.post("/admin/agent_exited", json={}).json()) == SUCCESS


def test_a_patch_that_does_not_apply_is_500_git_apply_failed(wire: Api) -> None:
    wire.backend.graded.patch = b"diff --git a/x b/x\n"
    wire.backend.graded.apply_error = "error: patch failed: x:1"
    reply = wire.admin.post("/prepare_grading", json={})
    assert reply.status_code == 500
    assert keys(reply.json()) == ERROR
    assert reply.json()["error"] == "git apply failed: error: patch failed: x:1"


def test_a_capture_that_fails_is_500_with_its_reason(wire: Api) -> None:
    wire.backend.graded.capture_error = "the tree cannot be read"
    reply = wire.admin.post("/prepare_grading", json={})
    assert (reply.status_code, reply.json()) == (500, {"error": "the tree cannot be read"})


def test_dialog_entries(wire: Api) -> None:
    assert wire.agent.get("/agent/dialog").json() == {"entries": []}
    wire.backend.dialog_file = b'{"seq": 1, "role": "user"}\nnot json\n{"seq": 2}\n{"x": 1}\n'
    doc = wire.agent.get("/agent/dialog").json()
    assert keys(doc) == DIALOG
    assert doc["entries"] == [{"seq": 1, "role": "user"}, {"seq": 2}]
    assert wire.agent.get("/agent/dialog", params={"since": 1}).json() == {"entries": [{"seq": 2}]}


# ---------------------------------------------------------------------------- the gate


@pytest.mark.parametrize("level", range(5))
@pytest.mark.parametrize("action", ACTIONS)
def test_gate_texts_by_level(level: int, action: str) -> None:
    made = make_api(LEVELS[level], prefix="")
    body = {"poc": "pocs/a.bin"} if action == "run_poc" else {"grading": False}
    status, reply = tool(made, "agent", "bencher", action, body)
    if action in LEVELS[level].actions:
        assert (status, keys(reply)) == (200, SCRIPT_RESULT)
    else:
        assert (status, reply) == (403, {"error": withheld(action)})
    status, reply = tool(made, "admin", "bencher", action, body)
    assert (status, keys(reply)) == (200, SCRIPT_RESULT)


def test_grading_flag_and_the_phase_on_the_agent_socket(wire: Api) -> None:
    for name in ("bencher", "bash"):
        body = {"grading": True, "command": "ls"}
        assert tool(wire, "agent", name, "build", body) == (403, {"error": GRADING_ONLY})
    assert wire.admin.post("/admin/agent_exited", json={}).status_code == 200
    for action in (*ACTIONS, "deploy"):  # after the phase, before any other rule
        body = {"poc": "pocs/a.bin", "grading": True}
        assert tool(wire, "agent", "bencher", action, body) == (403, {"error": PHASE_OVER})
    assert tool(wire, "agent", "bash", "execute", {"command": "ls"}) == (
        403,
        {"error": PHASE_OVER},
    )
    assert tool(wire, "admin", "bencher", "build", {})[0] == 200


# ---------------------------------------------------------------------------- calls that cannot run


@pytest.mark.parametrize(
    ("name", "action", "body", "error"),
    [
        ("shell", "x", {}, "tool not found: shell"),
        ("bencher", "deploy", {}, "invalid action: deploy"),
        ("bencher", "run_poc", {}, "invalid argument: missing field `poc`"),
        ("bencher", "run_poc", {"poc": "pocs/c.bin"}, "not a PoC of this task: pocs/c.bin"),
        ("bencher", "run_poc", {"poc": "pocs/../pocs/a.bin"}, None),
        ("bencher", "build", {"grading": "yes"}, None),
        ("bash", "execute", {}, "invalid argument: missing field `command`"),
    ],
)
def test_calls_that_cannot_run_are_500(
    wire: Api, name: str, action: str, body: object, error: str | None
) -> None:
    status, reply = tool(wire, "admin", name, action, body)
    assert (status, keys(reply)) == (500, ERROR), reply
    if error is not None:
        assert reply["error"] == error


def test_unconfigured_scripts_are_500() -> None:
    made = make_api(LEVELS[0], prefix="")
    made.service.task = Task(id="bare")
    for action, error in [
        ("build", "build script not configured"),
        ("function_test", "test script not configured"),
        ("intent_test", "intent_test not configured"),
    ]:
        assert tool(made, "admin", "bencher", action, {}) == (500, {"error": error})


def test_a_body_that_is_not_json_is_400(wire: Api) -> None:
    reply = wire.agent.post("/tool/bencher", params={"action": "build"}, content=b"{")
    assert reply.status_code == 400
    assert keys(reply.json()) == ERROR
    reply = wire.agent.post("/tool/bencher", json={})
    assert reply.status_code == 400  # no action


# ---------------------------------------------------------------------------- sessions


def test_admin_calls_after_prepare_run_in_the_grading_session(wire: Api) -> None:
    """SSEBench's evaluator sends `run_poc` with `{poc}` only: after `prepare_grading` it runs
    in the grading session's build, never in the agent phase's."""
    wire.backend.live.scripts["poc-1"] = Script(code=7)
    wire.backend.graded.scripts["poc-1"] = Script(code=0, stdout="graded")
    assert tool(wire, "admin", "bencher", "build", {"grading": False})[0] == 200
    assert tool(wire, "admin", "bencher", "run_poc", {"poc": "pocs/a.bin"})[1]["code"] == 7
    assert wire.admin.post("/prepare_grading", json={}).json() == {"success": True}
    # Before a grading build: no build yet in this session.
    assert (
        tool(wire, "admin", "bencher", "run_poc", {"poc": "/ssebench/pocs/a.bin"})[1]["code"] == -1
    )
    assert tool(wire, "admin", "bencher", "build", {"grading": True})[1]["code"] == 0
    reply = tool(wire, "admin", "bencher", "run_poc", {"poc": "/ssebench/pocs/a.bin"})[1]
    assert reply == {"code": 0, "stdout": "graded", "stderr": ""}
    assert tool(wire, "admin", "bencher", "function_test", {"grading": False})[1]["code"] == 0
    graded = wire.backend.graded.script_labels()
    assert graded == ["build", "poc-1", "function_test"]


# ---------------------------------------------------------------------------- bash


def test_bash_runs_until_the_agent_exits(wire: Api) -> None:
    assert tool(wire, "agent", "bash", "execute", {"command": "pwd"}) == (
        200,
        {"code": 0, "stdout": "ran pwd\n", "stderr": ""},
    )
    assert wire.backend.commands == ["pwd"]
    assert wire.admin.post("/admin/agent_exited", json={}).status_code == 200
    assert wire.backend.shell_closed == 1
    assert tool(wire, "admin", "bash", "execute", {"command": "pwd"}) == (
        500,
        {"error": "bash process has died"},
    )


# ---------------------------------------------------------------------------- SDK loading


def test_the_rebuilt_dataclasses_have_the_field_lists() -> None:
    made: type
    for made, fields in [
        (TaskDescription, TASK_DESCRIPTION),
        (Metadata, METADATA),
        (Capabilities, CAPABILITIES),
        (ScriptResult, SCRIPT_RESULT),
    ]:
        assert {field.name for field in dataclasses.fields(made)} == fields


@pytest.fixture
def sdk() -> Any:
    """How the SDK loads `/project` (dacite, here in strict mode), `/capabilities` and a
    tool's answer (`Class(**data)`)."""
    dacite = pytest.importorskip("dacite")

    def metadata(data: dict[str, Any]) -> Metadata:
        config = dacite.Config(cast=[Path], strict=True)
        loaded: Metadata = dacite.from_dict(Metadata, data, config=config)
        return loaded

    return metadata, Capabilities, ScriptResult


def test_the_sdk_loads_every_reply(wire: Api, sdk: Any) -> None:
    metadata, capabilities, script_result = sdk
    for listener in ("agent", "admin"):
        client = wire.client(listener)
        meta = metadata(client.get("/project").json())
        assert meta.poc[0] == Path("/ssebench/pocs/a.bin")
        assert capabilities(**client.get("/capabilities").json()).poc_count == 2
        for action in ACTIONS:
            body = {"poc": "pocs/a.bin"} if action == "run_poc" else {"grading": False}
            status, reply = tool(wire, listener, "bencher", action, body)
            assert script_result(**reply).code in (0, -1), (status, reply)
        reply = tool(wire, listener, "bash", "execute", {"command": "true"})[1]
        assert script_result(**reply).code == 0


def test_the_sdk_refuses_a_key_more(wire: Api, sdk: Any) -> None:
    """The loaders above are strict: the fields ssegrade's own API adds would break them."""
    metadata, capabilities, script_result = sdk
    with pytest.raises(TypeError):
        capabilities(**dict.fromkeys(CAPABILITIES, 1), listener="agent")
    with pytest.raises(TypeError):
        script_result(code=0, stdout="", stderr="", seconds=0.1)
    doc = wire.agent.get("/project").json() | {"checks": []}
    with pytest.raises(Exception, match="checks"):
        metadata(doc)


# ---------------------------------------------------------------------------- the document


def wire_operations() -> dict[tuple[str, str], set[int]]:
    """(path, METHOD) -> statuses of the root routes in `docs/openapi.json`."""
    document = json.loads(DOCS.read_text())
    return {
        (path, method.upper()): {int(code) for code in operation["responses"]}
        for path, operations in document["paths"].items()
        if not path.startswith("/ssegrade/")
        for method, operation in operations.items()
    }


def test_every_documented_status_of_the_wire_is_served() -> None:
    made = make_api(LEVELS[2], prefix="")
    seen: set[tuple[str, str, int]] = set()

    def expect(listener: str, method: str, path: str, status: int, **kwargs: Any) -> None:
        reply = made.client(listener).request(method, path, **kwargs)
        assert reply.status_code == status, (listener, method, path, reply.text)
        assert keys(reply.json()) == ERROR if status >= 400 else True
        template = "/tool/{name}" if path.startswith("/tool/") else path
        seen.add((template, method, status))

    for path in ("/version", "/project", "/capabilities", "/diff", "/files", "/result"):
        expect("agent", "GET", path, 200)
    expect("agent", "GET", "/final_diff", 200)
    expect("agent", "GET", "/agent/dialog", 200)
    expect("agent", "GET", "/agent/dialog", 400, params={"since": "x"})
    expect("agent", "POST", "/tool/bencher", 200, params={"action": "build"}, json={})
    expect("agent", "POST", "/tool/bencher", 400, params={"action": "build"}, content=b"")
    expect("agent", "POST", "/tool/bencher", 403, params={"action": "run_poc"}, json={})
    expect("agent", "POST", "/tool/nothing", 500, params={"action": "x"}, json={})
    big = made.agent.post("/tool/bencher", params={"action": "build"}, content=b"x" * (2 << 20))
    assert big.status_code == 413
    seen.add(("/tool/{name}", "POST", 413))
    expect("agent", "POST", "/prepare_grading", 403)
    expect("admin", "POST", "/prepare_grading", 200)
    expect("agent", "GET", "/reference/patch", 403)
    expect("admin", "GET", "/reference/patch", 200)
    expect("agent", "POST", "/admin/agent_exited", 403)
    expect("admin", "POST", "/admin/agent_exited", 200)
    made.backend.unreadable |= {"result.json", "final.patch", "dialog.jsonl"}
    for path in ("/result", "/final_diff", "/agent/dialog"):
        expect("agent", "GET", path, 500)
    made.backend.broken = True
    expect("agent", "GET", "/diff", 500)
    expect("agent", "GET", "/files", 500)
    again = make_api(LEVELS[0], FakeBackend(), prefix="")
    again.backend.graded.patch = b"diff --git a/x b/x\n"
    again.backend.graded.apply_error = "error: no"
    assert again.admin.post("/prepare_grading").status_code == 500
    seen.add(("/prepare_grading", "POST", 500))
    made.service.stopping = True
    expect("admin", "POST", "/tool/bencher", 503, params={"action": "build"}, json={})
    expect("admin", "GET", "/diff", 503)
    expect("admin", "GET", "/files", 503)
    expect("admin", "POST", "/prepare_grading", 503)
    documented = {
        (path, method, status)
        for (path, method), statuses in wire_operations().items()
        for status in statuses
    }
    assert seen == documented
