"""SSEBench's daemon contract, route by route: who may call what, and when.

Each route of SSEBench's wire has an access rule in its contract (`ACCESS` in
`tests/support/ssebench_wire.py`): served everywhere, on the admin socket only, or on the
agent-facing listeners too once the agent phase is over. Each route is asked on a fresh daemon (so
that `POST /admin/agent_exited` opens nothing for a later one), on both listeners; then the
after-agent routes are asked again once the entrypoint ended the agent phase.
"""

from __future__ import annotations

from typing import Any

import pytest

from ssegrade.protocol import LEVELS
from tests.support.fakedaemon import Api, make_api
from tests.support.ssebench_wire import ACCESS, DIFF, ERROR, REFERENCE_LOCKED

ROUTES = sorted(ACCESS)


def _ask(made: Api, listener: str, method: str, path: str) -> tuple[int, Any]:
    client = made.client(listener)
    params = {"action": "build"} if path.startswith("/tool/") else None
    body: dict[str, object] | None = {} if method == "POST" else None
    reply = client.request(method, path, params=params, json=body)
    return reply.status_code, reply.json()


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_each_listener_serves_what_the_contract_says(method: str, path: str) -> None:
    made = make_api(LEVELS[0], prefix="")
    status, body = _ask(made, "agent", method, path)
    refused = ACCESS[method, path] != "any"
    assert (status == 403) == refused, (method, path, status, body)
    assert status not in (404, 405), (method, path, status)
    if refused:
        assert isinstance(body, dict)
        assert set(body) == ERROR
    status, body = _ask(made, "admin", method, path)
    assert status != 403, (method, path, body)


def test_the_reference_patch_unlocks_on_the_agent_side_when_the_agent_exits() -> None:
    made = make_api(LEVELS[2], prefix="")
    after = [route for route in ROUTES if ACCESS[route] == "after-agent"]
    assert after == [("GET", "/reference/patch")]
    assert _ask(made, "agent", "GET", "/reference/patch") == (403, {"error": REFERENCE_LOCKED})
    assert made.admin.post("/admin/agent_exited", json={}).status_code == 200
    status, body = _ask(made, "agent", "GET", "/reference/patch")
    assert status == 200
    assert isinstance(body, dict)
    assert set(body) == DIFF
    assert body == {"diff": "diff --git a/x b/x\n"}
    for method, path in ROUTES:
        if ACCESS[method, path] == "admin":
            assert _ask(made, "agent", method, path)[0] == 403, (method, path)


def test_a_task_without_a_reference_patch_serves_the_empty_diff_after_the_agent() -> None:
    made = make_api(LEVELS[0], prefix="")
    made.backend.reference = None
    assert made.admin.post("/admin/agent_exited", json={}).status_code == 200
    assert _ask(made, "agent", "GET", "/reference/patch") == (200, {"diff": ""})
