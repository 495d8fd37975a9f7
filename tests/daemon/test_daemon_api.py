"""ssegrade's daemon API (under `/ssegrade`) in process: every route over a fake system
(`FakeWorld`), and the OpenAPI document.

Fast and exhaustive where a real daemon would be slow: the whole gate (every level, listener,
action and session), the 400/403/404 replies, the two phases, and the published
`docs/openapi.json` against the served routes. `tests/daemon/test_daemon.py` runs the same API in a
real daemon process on real sockets; `tests/daemon/test_daemon_wire.py` holds SSEBench's wire, at
the root, to the original's shapes.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from interpreters.daemon.app import MAX_BODY, create_app, openapi_document
from interpreters.daemon.service import Service
from ssegrade.internal.effects import Action, RunScript
from ssegrade.internal.task import Task
from ssegrade.protocol import ACTIONS, LEVELS, PREFIX, DiffText, Level, decode_patch, public_project
from ssegrade.testing import FakeWorld, Script
from tests.support.fakedaemon import FOLDER, TASK, Api, FakeBackend, InProcess, make_api
from tests.support.ssebench_wire import REFERENCE_LOCKED

DOCS = Path(__file__).resolve().parents[2] / "docs" / "openapi.json"


@pytest.fixture
def api() -> Api:
    return make_api()


def bencher(client: InProcess, action: str, **body: object) -> tuple[int, dict[str, object]]:
    reply = client.post("/tool/bencher", params={"action": action}, json=body)
    return reply.status_code, reply.json()


# ---------------------------------------------------------------------------- the gate


GATE = [
    (level, listener, action, grading)
    for level in LEVELS
    for listener in ("agent", "admin")
    for action in ACTIONS
    for grading in (False, True)
]


@pytest.mark.parametrize(
    ("level", "listener", "action", "grading"),
    GATE,
    ids=[f"{lv.number}-{li}-{a}-{'grading' if g else 'live'}" for lv, li, a, g in GATE],
)
def test_gate(level: Level, listener: str, action: Action, grading: bool) -> None:
    table = {
        0: {"build", "function_test", "run_poc", "intent_test"},
        1: {"build", "function_test", "run_poc"},
        2: {"build", "function_test"},
        3: {"build"},
        4: set(),
    }
    made = make_api(level)
    poc = {"poc": "pocs/a.bin"} if action == "run_poc" else {}
    status, body = bencher(made.client(listener), action, grading=grading, **poc)
    if listener == "admin" or (not grading and action in table[level.number]):
        assert status == 200, body
        assert isinstance(body["code"], int)
    else:
        assert status == 403, body
        assert set(body) == {"error"}
        if grading:
            assert body["error"] == "grading runs only through the admin socket"
        else:
            assert body["error"] == (
                f"{action} is not available at difficulty level {level.number} ({level.name})"
            )
        assert made.backend.live.trace == []


@pytest.mark.parametrize("level", LEVELS, ids=[str(level.number) for level in LEVELS])
def test_capabilities_follow_the_gate(level: Level) -> None:
    made = make_api(level)
    agent = made.agent.get("/capabilities").json()
    admin = made.admin.get("/capabilities").json()
    assert agent["actions"] == [a for a in ACTIONS if a in level.actions]
    assert admin["actions"] == list(ACTIONS)
    assert (agent["listener"], admin["listener"]) == ("agent", "admin")
    for doc in (agent, admin):
        assert doc["level"] == level.number
        assert doc["level_name"] == level.name
        assert doc["checks"] == ["build", "poc", "function_test", "intent_test"]
        assert doc["pocs"] == ["pocs/a.bin", "pocs/b.bin"]
        original = {key: doc[key] for key in ORIGINAL_CAPABILITIES}
        assert original == {
            "can_build": True,
            "can_run_poc": True,
            "poc_count": 2,
            "has_function_test": True,
            "has_intent_test": True,
        }


ORIGINAL_CAPABILITIES = (
    "can_build",
    "can_run_poc",
    "poc_count",
    "has_function_test",
    "has_intent_test",
)


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        ({}, (False, False, 0, False, False)),
        ({"scripts": {"build": "b.sh"}}, (True, False, 0, False, False)),
        ({"scripts": {"run": "r.sh"}, "files": {"poc": ["p"]}}, (False, True, 1, False, False)),
        ({"files": {"poc": ["p", "q"]}}, (False, False, 2, False, False)),
        ({"scripts": {"test": "t.sh"}}, (False, False, 0, True, False)),
        (
            {"scripts": {"test": "t.sh"}, "files": {"future_test": "f.diff"}},
            (False, False, 0, True, True),
        ),
        ({"files": {"future_test": "f.diff"}}, (False, False, 0, False, False)),
    ],
)
def test_capabilities_have_the_original_fields(
    config: dict[str, object], expected: tuple[object, ...]
) -> None:
    """`can_build`: a build script; `can_run_poc`: a run script and PoCs; `poc_count`;
    `has_function_test`: a test script; `has_intent_test`: a test script and hidden tests."""
    task = Task.model_validate({"id": "t", **config})
    service = Service(
        task=task, folder=FOLDER, level=LEVELS[4], **FakeBackend().ports(), version="1"
    )
    doc = InProcess(create_app(service, "agent")).get("/capabilities").json()
    assert tuple(doc[key] for key in ORIGINAL_CAPABILITIES) == expected
    assert list(doc)[: len(ORIGINAL_CAPABILITIES)] == list(ORIGINAL_CAPABILITIES)


# ---------------------------------------------------------------------------- bencher requests


def test_actions_run_the_bencher_programs_on_the_live_tree(api: Api) -> None:
    api.backend.live.scripts["build"] = Script(0, "built")
    status, body = bencher(api.agent, "build")
    assert (status, body["code"], body["stdout"]) == (200, 0, "built")
    assert body["log_file"] is None  # the agent cannot read the daemon's logs
    status, body = bencher(api.admin, "build")
    assert body["log_file"] == "logs/build.log"
    status, body = bencher(api.agent, "run_poc", poc="/ssebench/pocs/b.bin")
    assert status == 200
    labels = [e.label for e in api.backend.live.trace if isinstance(e, RunScript)]
    assert labels == ["build", "build", "poc-2"]
    assert api.backend.graded.trace == []


def test_run_poc_before_any_build_answers_minus_one(api: Api) -> None:
    status, body = bencher(api.agent, "run_poc", poc="pocs/a.bin")
    assert status == 200
    assert body["code"] == -1
    assert "build" in str(body["stderr"])


@pytest.mark.parametrize(
    ("action", "body", "message"),
    [
        ("run_poc", {"poc": "pocs/../pocs/a.bin"}, "must not contain '..'"),
        ("run_poc", {"poc": "../ssebench/pocs/a.bin"}, "must not contain '..'"),
        ("run_poc", {"poc": "/ssebench/pocs/../pocs/a.bin"}, "must not contain '..'"),
        ("run_poc", {"poc": "pocs/c.bin"}, "the task names no PoC 'pocs/c.bin'"),
        ("run_poc", {"poc": "/elsewhere/pocs/a.bin"}, "the task names no PoC"),
        ("run_poc", {}, "run_poc needs a poc"),
        ("build", {"poc": "pocs/a.bin"}, "poc is only for run_poc"),
        ("deploy", {}, "query.action"),
        ("build", {"limit": -1}, "limit"),
        ("build", {"grading": "maybe"}, "grading"),
        ("build", {"extra": 1}, "extra"),
    ],
)
def test_bad_requests_are_400(api: Api, action: str, body: dict[str, object], message: str) -> None:
    for client in (api.agent, api.admin):
        status, reply = bencher(client, action, **body)
        assert status == 400, reply
        assert set(reply) == {"error"}
        assert message in str(reply["error"])
    assert api.backend.live.trace == []


def test_malformed_json_and_no_body(api: Api) -> None:
    reply = api.agent.post(
        "/tool/bencher",
        params={"action": "build"},
        content=b"{",
        headers={"content-type": "application/json"},
    )
    assert reply.status_code == 400
    assert "error" in reply.json()
    reply = api.agent.post("/tool/bencher", params={"action": "build"})
    assert reply.status_code == 200
    assert reply.json()["code"] == 0


def test_agent_limit_is_capped_admin_limit_is_kept(api: Api) -> None:
    bencher(api.agent, "build", limit=5)
    bencher(api.agent, "build", limit=500)
    bencher(api.agent, "build")
    bencher(api.admin, "build", limit=500)
    assert api.backend.limits == [5, 60, 60, 500]


def test_unknown_route_and_method_are_errors(api: Api) -> None:
    assert api.agent.get("/nothing").json() == {"error": "Not Found"}
    reply = api.agent.get("/tool/bencher")
    assert reply.status_code == 405
    assert set(reply.json()) == {"error"}


# ---------------------------------------------------------------------------- admin only


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("POST", "/prepare_grading"),
        ("POST", "/admin/agent_exited"),
    ],
)
def test_admin_only_endpoints_are_refused_to_the_agent(api: Api, method: str, path: str) -> None:
    reply = api.agent.request(method, path)
    assert reply.status_code == 403
    assert reply.json() == {"error": "endpoint is only available on the admin socket"}
    assert api.service.agent_phase
    assert api.backend.begun == 0


def test_reference_patch(api: Api) -> None:
    reply = api.admin.get("/reference/patch")
    assert reply.json() == {"diff": "diff --git a/x b/x\n", "base64": None}
    api.backend.reference = None
    assert api.admin.get("/reference/patch").status_code == 404


def test_the_reference_patch_reaches_the_agent_side_only_after_the_agent(api: Api) -> None:
    early = api.agent.get("/reference/patch")
    assert (early.status_code, early.json()) == (403, {"error": REFERENCE_LOCKED})
    assert api.admin.post("/admin/agent_exited").status_code == 200
    late = api.agent.get("/reference/patch")
    assert late.json() == {"diff": "diff --git a/x b/x\n", "base64": None}


def test_project_is_the_public_view(api: Api) -> None:
    text = api.agent.get("/project").text
    for secret in ("fix.diff", "future", "hidden", "private_note", "not for the agent"):
        assert secret not in text
    doc = json.loads(text)
    assert doc["id"] == "demo-1"
    assert doc["pocs"] == ["pocs/a.bin", "pocs/b.bin"]
    assert doc["checks"] == ["build", "poc", "function_test", "intent_test"]
    assert doc["issue"] == "crash on a.bin"
    assert doc == public_project(TASK).model_dump(mode="json")


# ---------------------------------------------------------------------------- the phases


def test_prepare_grading_switches_to_the_grading_session_and_applies_once(api: Api) -> None:
    patch = b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n"
    api.backend.graded.patch = patch
    status, body = bencher(api.admin, "build", grading=True)
    assert (status, body["code"]) == (200, -1)
    assert "prepare_grading" in str(body["stderr"])
    assert api.admin.get("/final_diff").status_code == 404
    first = api.admin.post("/prepare_grading").json()
    second = api.admin.post("/prepare_grading").json()
    assert first == second
    assert first["outcome"] == "prepared"
    assert (first["empty"], first["patch_bytes"], first["left_out"]) == (False, len(patch), [])
    assert api.backend.graded.applied == 1
    assert api.backend.begun == 1
    status, body = bencher(api.admin, "build", grading=True)
    assert (status, body["code"]) == (200, 0)
    assert api.admin.get("/final_diff").json()["diff"].startswith("diff --git a/x b/x")
    assert api.backend.live.trace == []


@pytest.mark.parametrize(
    ("world", "outcome"),
    [
        (
            FakeWorld(patch=b"x", apply_error="does not apply"),
            {"outcome": "apply_failed", "log": "does not apply", "log_file": None},
        ),
        (
            FakeWorld(capture_error="unreadable"),
            {"outcome": "capture_failed", "message": "unreadable"},
        ),
        (
            FakeWorld(patch=b"x", proof_differs=True),
            {
                "outcome": "capture_failed",
                "message": "the captured patch does not reproduce the source tree",
            },
        ),
        (
            FakeWorld(patch=b" \n"),
            {
                "outcome": "prepared",
                "empty": True,
                "patch_bytes": 2,
                "left_out": [],
                "log_file": "results/logs/capture.log",
            },
        ),
    ],
)
def test_prepare_grading_outcomes(world: FakeWorld, outcome: dict[str, object]) -> None:
    made = make_api(backend=FakeBackend(graded=world))
    assert made.admin.post("/prepare_grading").json() == outcome
    _, body = bencher(made.admin, "build", grading=True)
    assert body["code"] == (0 if outcome["outcome"] == "prepared" else -1)


def test_agent_exited_closes_the_agent_tools(api: Api) -> None:
    assert bencher(api.agent, "build")[0] == 200
    assert api.admin.post("/admin/agent_exited").json() == {"agent_phase": False}
    for action in ACTIONS:
        status, body = bencher(api.agent, action, poc="pocs/a.bin" if action == "run_poc" else None)
        assert status == 403
        assert body == {"error": "the agent phase is over: the agent-facing tools are closed"}
    for path in ("/diff", "/files"):  # SSEBench's daemon shows the changes after it too
        assert api.agent.get(path).status_code == 200
        assert api.admin.get(path).status_code == 200
    caps = api.agent.get("/capabilities").json()
    assert (caps["agent_phase"], caps["actions"]) == (False, [])
    assert api.agent.get("/version").status_code == 200
    assert bencher(api.admin, "build")[0] == 200


def test_result_is_served_byte_for_byte_once_written(api: Api) -> None:
    assert api.agent.get("/result").status_code == 404
    api.backend.graded.artifacts["result.json"] = (
        b'{"patch_result":{"status":"passed","build_success":true},"config":{"id":"demo-1"}}'
    )
    reply = api.agent.get("/result")
    assert reply.status_code == 200
    assert json.loads(reply.content)["config"] == {"id": "demo-1"}
    assert reply.json()["patch_result"]["status"] == "passed"


def test_diff_of_the_live_tree(api: Api) -> None:
    api.backend.live.patch = b"diff --git a/x b/x\n+caf\xc3\xa9\n"
    assert api.agent.get("/diff").json() == {
        "diff": "diff --git a/x b/x\n+caf\u00e9\n",
        "base64": None,
    }
    patch = b"diff --git a/x b/x\n+caf\xe9\n"
    api.backend.live.patch = patch
    reply = api.agent.get("/diff").json()
    assert reply["diff"] == "diff --git a/x b/x\n+caf\ufffd\n"  # readable as it is
    assert base64.b64decode(reply["base64"]) == patch  # exact
    assert decode_patch(DiffText.model_validate(reply)) == patch


def _raw(old: str, new: str, letter: str, path: bytes) -> bytes:
    return f":{old} {new} {'1' * 40} {'2' * 40} {letter}".encode() + b"\0" + path + b"\0"


def test_files_of_the_live_tree_as_git_lists_them(api: Api) -> None:
    api.backend.listing = (
        _raw("000000", "100644", "A", b"blob.bin")
        + _raw("100644", "100644", "M", b"lib.c")
        + _raw("100644", "120000", "T", b"link")
        + b"-\t-\tblob.bin\0"
        + b"3\t1\tlib.c\0"
        + b"1\t1\tlink\0"
    )
    files = api.agent.get("/files").json()["files"]
    assert files == [
        {"path": "blob.bin", "status": "added", "additions": 0, "deletions": 0,
         "kind": "added", "old_mode": None, "new_mode": "100644", "binary": True},
        {"path": "lib.c", "status": "modified", "additions": 3, "deletions": 1,
         "kind": "modified", "old_mode": "100644", "new_mode": "100644", "binary": False},
        {"path": "link", "status": "modified", "additions": 1, "deletions": 1,
         "kind": "type_changed", "old_mode": "100644", "new_mode": "120000", "binary": False},
    ]  # fmt: skip
    api.backend.listing = b":100644 100644 x"
    reply = api.agent.get("/files")
    assert reply.status_code == 500
    assert reply.json()["error"].startswith("unreadable list of changed files")


# ---------------------------------------------------------------------------- OpenAPI


def test_published_openapi_document_is_current() -> None:
    """`docs/openapi.json` is `ssegrade daemon --openapi`; regenerate it when this fails."""
    assert json.loads(DOCS.read_text()) == openapi_document()


def documented_operations(prefix: str = PREFIX) -> dict[tuple[str, str], set[int]]:
    """(path, METHOD) -> the status codes `docs/openapi.json` lists for it: the routes of
    ssegrade's API (paths below `prefix`, given without it), or with `prefix` "" those of
    SSEBench's wire (every path not below `/ssegrade`)."""
    document = json.loads(DOCS.read_text())
    found: dict[tuple[str, str], set[int]] = {}
    for path, operations in document["paths"].items():
        ours = path.startswith(PREFIX + "/")
        if ours != bool(prefix):
            continue
        for method, operation in operations.items():
            statuses = {int(code) for code in operation["responses"]}
            found[path.removeprefix(prefix), method.upper()] = statuses
    return found


@pytest.mark.parametrize("listener", ["agent", "admin"])
def test_served_routes_and_methods_match_the_document(listener: str) -> None:
    """Every documented operation is served and answers a documented status; every other
    method on a documented path is 405, and an undocumented path is 404."""
    operations = documented_operations()
    client = make_api().client(listener)
    for path in sorted({path for path, _ in operations}):
        for method in ("GET", "POST", "PUT", "DELETE", "PATCH"):
            params = {"action": "build"} if path == "/tool/bencher" else None
            reply = client.request(method, path, params=params)
            if (path, method) in operations:
                assert reply.status_code in operations[path, method], (path, method, reply.text)
            else:
                assert reply.status_code == 405, (path, method)
    root = InProcess(client.app, prefix="")
    assert root.get("/openapi.json").status_code == 404
    assert root.get("/docs").status_code == 404


def test_every_documented_status_is_served() -> None:
    """Each (path, method, status) of `docs/openapi.json` is answered by some request, and
    nothing else: the document lists exactly the statuses the routes give."""
    made = make_api(LEVELS[2])
    seen: set[tuple[str, str, int]] = set()

    def expect(listener: str, method: str, target: str, status: int, **body: object) -> None:
        reply = made.client(listener).request(method, target, json=body or None)
        assert reply.status_code == status, (listener, method, target, reply.text)
        seen.add((target.split("?", maxsplit=1)[0], method, status))

    for path in ("/version", "/project", "/capabilities", "/diff", "/files"):
        expect("agent", "GET", path, 200)
    expect("agent", "GET", "/result", 404)
    expect("agent", "GET", "/final_diff", 404)
    expect("agent", "POST", "/tool/bencher?action=build", 200)
    expect("agent", "POST", "/tool/bencher?action=run_poc", 403, poc="pocs/a.bin")
    expect("admin", "POST", "/tool/bencher?action=run_poc", 400, poc="../a.bin")
    expect("admin", "POST", "/guard/observe", 404)
    expect("agent", "POST", "/prepare_grading", 403)
    expect("admin", "POST", "/prepare_grading", 200)
    expect("agent", "POST", "/guard/observe", 403)
    expect("admin", "POST", "/guard/observe", 200)
    expect("agent", "GET", "/final_diff", 200)
    expect("agent", "GET", "/reference/patch", 403)
    expect("admin", "GET", "/reference/patch", 200)
    made.backend.reference = None
    expect("admin", "GET", "/reference/patch", 404)
    made.backend.graded.artifacts["result.json"] = b'{"patch_result":{"status":"error"}}'
    expect("agent", "GET", "/result", 200)
    expect("agent", "POST", "/admin/agent_exited", 403)
    expect("admin", "POST", "/admin/agent_exited", 200)
    made.backend.broken = True
    expect("agent", "GET", "/diff", 500)
    expect("agent", "GET", "/files", 500)
    made.backend.broken = False
    big = made.client("admin").post(
        "/tool/bencher", params={"action": "build"}, content=b"x" * (MAX_BODY + 1)
    )
    assert big.status_code == 413
    seen.add(("/tool/bencher", "POST", 413))
    made.service.stopping = True
    expect("admin", "POST", "/tool/bencher?action=build", 503)
    expect("admin", "GET", "/diff", 503)
    expect("admin", "GET", "/files", 503)
    expect("admin", "POST", "/prepare_grading", 503)
    expect("admin", "POST", "/guard/observe", 503)
    documented = {
        (path, method, status)
        for (path, method), statuses in documented_operations().items()
        for status in statuses
    }
    assert seen == documented


def test_a_failure_of_the_daemon_is_a_500_error_body(api: Api) -> None:
    api.backend.unreadable.add("result.json")
    reply = api.agent.get("/result")
    assert reply.status_code == 500
    assert reply.json() == {"error": "internal error: PermissionError: cannot read result.json"}
    assert api.agent.get("/version").status_code == 200
