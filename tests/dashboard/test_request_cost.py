"""What makes a request cheap (issue 17, ``bench.api``) without changing what it may do:

- a request with no body is read without the body timer, and only such a request;
- a free admission slot is taken at once, a full lane still queues in order;
- the app's JSON comes from one encoder made once, byte for byte what ``json.dumps`` writes.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
import trio
import trio.testing

from dashboard.admission import HEALTH_SLOTS, Admission
from dashboard.intake import Intake, Refusal, bodiless
from dashboard.jsonio import dumps


def scope(path: str = "/api/health", version: str = "1.1", **headers: str) -> dict[str, Any]:
    return {
        "type": "http",
        "http_version": version,
        "method": "GET",
        "path": path,
        "query_string": b"",
        "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()],
    }


@pytest.mark.parametrize(
    ("request_scope", "expected"),
    [
        (scope(), True),
        (scope(version="1.0"), True),
        (scope(Content_Length="0"), True),
        (scope(Content_Length=" 0 "), True),
        (scope(Content_Length="5"), False),
        (scope(Content_Length="00"), False),  # not the plain 0: timed like any body
        (scope(Transfer_Encoding="chunked"), False),
        (scope(Transfer_Encoding="chunked", Content_Length="0"), False),
        (scope(version="2"), False),  # HTTP/2 may send DATA frames whatever the head says
        ({"type": "http", "headers": []}, False),  # no version: not known to be HTTP/1
    ],
)
def test_bodiless(request_scope: dict[str, Any], expected: bool) -> None:
    assert bodiless(request_scope) is expected


async def test_only_a_bodiless_request_goes_straight_on() -> None:
    """A bodiless request reaches the app with its own receive, untouched and unread (no
    timer, no copy, nothing held), after its head is checked; one that declares a body is
    still read first, under the timer (0 s here: any wait is a 408)."""
    intake = Intake(timeout=0)

    async def receive() -> Any:
        await trio.lowlevel.checkpoint()  # as hypercorn's queue does, even when filled
        return {"type": "http.request", "body": b"", "more_body": False}

    assert await intake.admit(scope(), receive) == (receive, 0)
    assert await intake.admit(scope(Content_Length="0"), receive) == (receive, 0)
    assert await intake.admit(scope(Content_Length="3"), receive) == Refusal(
        408, "request body not received within 0s"
    )
    assert isinstance(await intake.admit(scope(Transfer_Encoding="chunked"), receive), Refusal)
    refused = await intake.admit(scope("/" + "a" * 9000), receive)  # the head is still checked
    assert isinstance(refused, Refusal)
    assert refused.status == 414
    assert intake.held == 0


class Held:
    """An ASGI app whose requests stay inside until ``gate`` is set; counts who got in."""

    def __init__(self) -> None:
        self.gate = trio.Event()
        self.inside: list[str] = []
        self.answered: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.inside.append(scope["path"])
        await self.gate.wait()
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"{}", "more_body": False})
        self.answered.append(scope["path"])


async def empty_body() -> Any:
    return {"type": "http.request", "body": b"", "more_body": False}


async def ignore(message: Any) -> None:
    pass


@pytest.mark.parametrize(("path", "lane"), [("/api/health", "health"), ("/api/pools", "requests")])
async def test_free_slots_are_taken_at_once_and_a_full_lane_queues(
    path: str, lane: str, autojump_clock: trio.testing.MockClock
) -> None:
    held = Held()
    admission = Admission(held, 4, lambda: 0)
    slots: trio.Semaphore = getattr(admission, lane)
    size = HEALTH_SLOTS if lane == "health" else 4
    async with trio.open_nursery() as nursery:
        for _ in range(size + 2):
            nursery.start_soon(admission, scope(path), empty_body, ignore)
        await trio.testing.wait_all_tasks_blocked()
        assert len(held.inside) == size  # every free slot taken, no more
        assert slots.value == 0
        assert slots.statistics().tasks_waiting == 2
        held.gate.set()
    assert len(held.answered) == size + 2
    assert slots.value == size  # every slot given back


async def test_a_cancelled_request_gives_its_slot_back(
    autojump_clock: trio.testing.MockClock,
) -> None:
    held = Held()
    admission = Admission(held, 4, lambda: 0)
    with trio.move_on_after(1):
        await admission(scope(), empty_body, ignore)
    assert held.inside == ["/api/health"]
    assert admission.health.value == HEALTH_SLOTS


@pytest.mark.parametrize(
    "value",
    [
        {"ok": True, "node_id": 3, "hostname": "h\u00e9", "ip_address": "::1", "is_leader": False},
        {"z": 1, "a": [1.5, None, 'x\n"y"'], "m": {"k": -0.0}},
        [],
        "plain",
    ],
)
def test_the_one_encoder_writes_what_json_dumps_writes(value: Any) -> None:
    compact = json.dumps(value, separators=(",", ":"))
    assert dumps(value) == compact
    assert dumps(value, separators=(",", ":")) == compact  # as the JSON provider calls it
    assert dumps(value, indent=2) == json.dumps(value, separators=(",", ":"), indent=2)


def test_non_finite_floats_are_still_null() -> None:
    body = {"nan": math.nan, "inf": [math.inf, -math.inf, 1.5]}
    assert dumps(body) == '{"nan":null,"inf":[null,null,1.5]}'
    assert dumps(body, separators=(",", ":")) == '{"nan":null,"inf":[null,null,1.5]}'
