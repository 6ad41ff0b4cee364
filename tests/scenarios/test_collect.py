"""The event collector (``scenarios.play.collect``) against fake nodes behind
``httpx.MockTransport``: each fake answers ``/api/events`` from a real ``swim.History`` ring,
so paging, ``next`` and ``dropped`` are the node's own; a restart is a new ring and a new
``boot``."""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
import pytest
import trio

from scenarios import render_report
from scenarios.play.collect import EventCollector, open_collector, parse_page
from scenarios.reporting.results import error_results
from scenarios.reporting.summary import collection_lines
from swim import History, MemberEvent
from tests.support import wait_for_async


class FakeNode:
    """``GET /api/events`` of one node process after another: a ring, a boot, a request log."""

    def __init__(self, node_id: int, capacity: int = 10_000) -> None:
        self.node_id = node_id
        self.capacity = capacity
        self.requests: list[tuple[int, int]] = []  # (after, limit) asked
        self.mode = "ok"  # or "hang", "503", "garbage", "backwards"
        self.restart()

    def restart(self) -> None:
        self.history = History(self.capacity)
        self.boot = secrets.token_hex(8)
        self.made = 0

    def change(self, n: int) -> None:
        """``n`` more membership changes (observer: this node; mono counts them)."""
        events = [
            MemberEvent(float(self.made + k), self.node_id, k % 5, None, "alive", 1, "join")
            for k in range(n)
        ]
        self.made += n
        self.history.record(events, wall=1.7e9, mono_offset=0.0)

    async def answer(self, request: httpx.Request) -> httpx.Response:
        after = int(request.url.params["after"])
        limit = int(request.url.params["limit"])
        self.requests.append((after, limit))
        if self.mode == "hang":
            await trio.sleep_forever()
        if self.mode == "503":
            return httpx.Response(503, json={"error": "overloaded"})
        if self.mode == "garbage":
            return httpx.Response(200, content=b"<html>not json")
        page = self.history.page(after, limit)
        events = [e.as_dict() for e in page.events]
        if self.mode == "backwards":
            events.reverse()
        body = {"node_id": self.node_id, "events": events, "next": page.next}
        return httpx.Response(200, json={**body, "dropped": page.dropped, "boot": self.boot})


def transport_for(*nodes: FakeNode) -> httpx.MockTransport:
    by_port = {9000 + n.node_id: n for n in nodes}

    async def handle(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/api/events"
        return await by_port[request.url.port or 0].answer(request)

    return httpx.MockTransport(handle)


def url(node: FakeNode) -> str:
    return f"http://127.0.0.1:{9000 + node.node_id}"


@asynccontextmanager
async def collector(*nodes: FakeNode, limit: int = 5000) -> AsyncIterator[EventCollector]:
    """A collector without background polling: the test polls."""
    async with httpx.AsyncClient(transport=transport_for(*nodes)) as client:
        c = EventCollector(client, timeout=0.3, limit=limit)
        for n in nodes:
            c.follow(n.node_id, url(n))
        yield c


async def test_pages_until_caught_up_and_hands_on_the_event_log_shape() -> None:
    node = FakeNode(1)
    node.change(12)
    async with collector(node, limit=5) as c:
        assert await c.poll(1)
        assert node.requests == [(0, 5), (5, 5), (10, 5)]  # the third page is short: caught up
        assert [e["mono"] for e in c.events()] == [float(k) for k in range(12)]
        assert set(c.events()[0]) == {
            "mono", "wall", "observer", "subject", "old", "new", "incarnation", "cause"
        }  # fmt: skip
        node.change(2)
        assert await c.poll(1)
        assert node.requests[-1] == (12, 5)
        assert len(c.events()) == 14
        feed = c.summary(0.0)["nodes"][0]
        assert (feed["events"], feed["restarts"], feed["dropped"], feed["complete"]) == (
            14,
            0,
            0,
            True,
        )


async def test_a_new_boot_is_read_from_zero_and_the_old_boot_is_kept() -> None:
    node = FakeNode(2)
    node.change(5)
    async with collector(node) as c:
        assert await c.poll(2)
        old_boot = node.boot
        node.restart()  # numbers from 1 again: a cursor of 5 would skip the new 1..5
        node.change(7)
        assert await c.poll(2)
        assert node.requests == [(0, 5000), (5, 5000), (0, 5000)]
        assert len(c.events()) == 12
        feed = c.summary(0.0)["nodes"][0]
        assert feed["restarts"] == 1
        assert [b["boot"] for b in feed["boots"]] == [old_boot, node.boot]
        assert [b["events"] for b in feed["boots"]] == [5, 7]
        assert c.summary(0.0)["restarted"] == [2]
        assert any("restarted once" in line for line in collection_lines(c.summary(0.0)))


async def test_events_that_left_the_ring_unread_are_reported_as_dropped() -> None:
    node = FakeNode(3, capacity=10)
    node.change(25)  # seq 1..15 are gone from a ring of 10
    async with collector(node) as c:
        assert await c.poll(3)
        assert len(c.events()) == 10
        summary = c.summary(0.0)
        assert summary["dropped"] == 15
        assert summary["nodes"][0]["boots"][0]["dropped"] == 15
        (line,) = collection_lines(summary)
        assert "node 3 lost 15" in line
        results = {**error_results(None, "s.yaml", "real", 0, ""), "collection": summary}
        assert "<p class='error'>events: node 3 lost 15 before" in render_report(results, None)


async def test_a_silent_node_costs_one_bounded_wait_and_keeps_what_was_read() -> None:
    node = FakeNode(4)
    node.change(3)
    async with collector(node) as c:
        assert await c.poll(4)
        node.mode = "hang"  # a paused process: the request is accepted, never answered
        with trio.fail_after(3):
            assert not await c.poll(4)
        assert len(c.events()) == 3
        feed = c.summary(0.0)["nodes"][0]
        assert not feed["complete"]
        assert "no answer within 0.3s" in feed["error"]
        with trio.fail_after(3):
            assert not await c.catch_up(4, bound=0.1)
        node.mode = "ok"  # resumed: read again, nothing lost
        node.change(2)
        assert await c.poll(4)
        assert len(c.events()) == 5
        assert c.summary(0.0)["nodes"][0]["complete"]


@pytest.mark.parametrize(
    ("mode", "said"),
    [("503", "HTTP 503"), ("garbage", "malformed"), ("backwards", "do not increase")],
)
async def test_a_bad_answer_is_an_error_of_that_poll_not_a_crash(mode: str, said: str) -> None:
    node = FakeNode(5)
    node.change(4)
    async with collector(node) as c:
        node.mode = mode
        assert not await c.poll(5)
        assert c.events() == []
        assert said in c.summary(0.0)["nodes"][0]["error"]
        node.mode = "ok"
        assert await c.poll(5)
        assert len(c.events()) == 4


async def test_a_node_that_cannot_be_reached_is_an_error() -> None:
    async with httpx.AsyncClient() as client:
        c = EventCollector(client, timeout=2.0)
        c.follow(7, "http://127.0.0.1:1")  # nothing listens on port 1
        assert not await c.poll(7)
        assert "cannot read http://127.0.0.1:1" in c.summary(0.0)["nodes"][0]["error"]
        c.follow(8, "not a url")
        assert not await c.poll(8)
        assert c.summary(0.0)["incomplete"] == [7, 8]


GOOD = {"events": [], "next": 3, "dropped": 0, "boot": "ab12"}


@pytest.mark.parametrize(
    ("body", "after"),
    [
        ([], 0),
        ({**GOOD, "boot": ""}, 0),
        ({**GOOD, "next": -1}, 0),
        ({**GOOD, "next": True}, 0),
        ({**GOOD, "next": 2}, 3),  # behind the cursor
        ({**GOOD, "events": [{"seq": 1}]}, 0),  # no time
        ({**GOOD, "events": [{"seq": 4, "mono": float("nan")}]}, 3),
        ({**GOOD, "events": [{"seq": 3, "mono": 1.0, "observer": 0, "subject": 1}]}, 3),
    ],
)
def test_parse_page_refuses_what_is_not_a_page(body: object, after: int) -> None:
    assert parse_page(GOOD, 3).next == 3
    with pytest.raises(ValueError):
        parse_page(body, after)


async def test_background_polling_follows_and_rests() -> None:
    a, b = FakeNode(0), FakeNode(1)
    a.change(2)
    b.change(3)
    async with open_collector(interval=0.01, transport=transport_for(a, b)) as c:
        c.follow(0, url(a))
        c.follow(1, url(b))
        await wait_for_async("both nodes read", lambda: len(c.events()) == 5, timeout=10)
        c.rest(0)  # paused: not asked in the background any more
        asked, seen_b = len(a.requests), len(b.requests)
        await wait_for_async("node 1 polled 3 more times", lambda: len(b.requests) >= seen_b + 3)
        assert len(a.requests) <= asked + 1  # at most the poll already under way
        a.change(1)
        c.follow(0, url(a))  # resumed
        await wait_for_async("node 0 read again", lambda: len(c.events()) == 6, timeout=10)
