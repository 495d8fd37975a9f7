"""The daemon's `GET /result` beside an empty `result.json` made before grading.

SSEBench's runner makes the run folder's `result.json` empty before the task container starts;
the grade is written into it at the end. Until then, the daemon has no result to serve: its
own wire answers 404 (no result yet), SSEBench's `{"available": false}`, never a 500 that
reads the empty file as a broken grade.
"""

from __future__ import annotations

import pytest

from tests.support.fakedaemon import make_api


@pytest.mark.parametrize("made", [b"", b"\n"], ids=["empty", "blank"])
def test_an_empty_premade_result_json_is_no_result_yet(made: bytes) -> None:
    api = make_api()
    api.backend.graded.artifacts["result.json"] = made
    reply = api.agent.get("/result")
    assert reply.status_code == 404, reply.text
    assert reply.json() == {"error": "no result yet: grading has not written result.json"}
