"""Forwards and their slots (issue 12): no forward answers later than the 5 s forward bound,
however many are queued; a percent-encoded ``routing`` key is still seen as a forward; every
call to a peer is made while the request holds a forward slot.

All on the runtime fakes and trio's autojump clock: times are trio's, not the wall clock's."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from quart_trio import QuartTrio

from cluster.runtime import FORWARD_TIMEOUT
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakePeers
from dashboard import dashboard_state
from dashboard.admission import is_forward
from dashboard.params import parse_pairs

from .conftest import call

Result = tuple[float, int, Any]


async def many(client: Any, path: str, n: int) -> list[Result]:
    """``n`` concurrent GETs of ``path``: (seconds until answered, status, body) of each."""
    results: list[Result] = []
    start = trio.current_time()

    async def one() -> None:
        status, body, _ = await call(client, "GET", path)
        results.append((trio.current_time() - start, status, body))

    async with trio.open_nursery() as nursery:
        for _ in range(n):
            nursery.start_soon(one)
    return results


async def test_queued_forwards_never_wait_past_the_bound(
    app: QuartTrio, client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    """Issue 12: 12 slots x 5 s made queued forwards to a paused peer wait up to 25 s. Now
    the queue wait counts against the same 5 s: 60 forwards all end with 503 by then."""
    peers.hang(1)
    slots = dashboard_state(app).admission.forward_slots
    results = await many(client, "/api/nodes/1/workers", 60)
    assert [status for _, status, _ in results] == [503] * 60
    assert max(t for t, _, _ in results) <= FORWARD_TIMEOUT
    ran = [b for _, _, b in results if b == {"error": "monitor 'workers' timed out after 5s"}]
    queued = [b["error"] for _, _, b in results if b not in ran]
    assert len(ran) == slots  # the first batch: the runtime's own bound
    assert queued == [
        f"forward not started within 5s: all {slots} forward slots stayed busy "
        "(slow or paused peers)"
    ] * (60 - slots)
    assert peers.in_flight == 0
    assert dashboard_state(app).admission.statistics()["forwards_in_flight"] == 0


async def test_queued_forward_gets_what_is_left_of_the_bound(
    app: QuartTrio, client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    """A slow peer (3 s an answer): the first batch answers at 3 s; the second gets its slots
    at 3 s with 2 s left, less than the peer needs, so it answers 503 at 5 s, not at 6 s."""
    peers.delay = 3.0
    slots = dashboard_state(app).admission.forward_slots
    results = await many(client, "/api/nodes/1/system_stats", 2 * slots)
    first = sorted(results)[:slots]
    second = sorted(results)[slots:]
    assert all(t == pytest.approx(3.0) and status == 200 for t, status, _ in first)
    assert all(t == pytest.approx(5.0) and status == 503 for t, status, _ in second)
    assert {b["error"] for _, _, b in second} == {
        "forward timed out after 5s (3.0s of it queued for a slot)"
    }


async def test_queued_forward_answered_in_time_is_200(
    app: QuartTrio, client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    peers.delay = 2.0
    slots = dashboard_state(app).admission.forward_slots
    results = await many(client, "/api/nodes/1/bdevs", 2 * slots)
    assert [status for _, status, _ in results] == [200] * (2 * slots)
    assert max(t for t, _, _ in results) == pytest.approx(4.0)


async def test_percent_encoded_routing_is_a_forward(
    client: Any, peers: FakePeers, runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    """Issue 12: ``?%72outing=broadcast`` once bypassed the forward slots, so pool monitors
    to a paused peer could take every request slot. Classification parses the query as the
    handler does: they queue for forward slots and health keeps answering."""
    assert is_forward("/api/pools/1.0/monitor", b"query=x&%72outing=broadcast", 0)
    assert is_forward("/api/pools/1.0/monitor", b"query=x&r%6Futing=direct%5Fid%3A1", 0)
    assert not is_forward("/api/pools/1.0/monitor", b"query=x&%72outing=local", 0)
    peers.hang(1)
    slots = runtime.settings.viz.max_threads
    async with trio.open_nursery() as nursery:
        for _ in range(slots + 4):
            nursery.start_soon(
                many, client, "/api/pools/1.0/monitor?query=x&%72outing=broadcast", 1
            )
        await trio.testing.wait_all_tasks_blocked()
        assert 0 < peers.in_flight < slots
        t0 = trio.current_time()
        status, _, _ = await call(client, "GET", "/api/health")
        assert status == 200
        assert trio.current_time() == t0


QUERY_KEYS = st.sampled_from(["routing", "query", "Routing", "routing ", "x", "min_event_id"])
ROUTINGS = st.sampled_from(
    ["", "local", "dynamic", "broadcast", "direct_id:1", "direct_id:0", "direct_hash:3",
     "range:0:3", "physical:1", "dynamic:1", "bogus"]
)  # fmt: skip


def encode(text: str, mask: list[bool]) -> str:
    """``text`` with the characters picked by ``mask`` percent-encoded (``+`` for spaces)."""
    out = []
    for ch, enc in zip(text, mask + [False] * len(text), strict=False):
        if ch == " ":
            out.append("+" if enc else "%20")
        else:
            out.append("".join(f"%{b:02X}" for b in ch.encode()) if enc else ch)
    return "".join(out)


@st.composite
def monitor_queries(draw: st.DrawFn) -> bytes:
    pairs = draw(st.lists(st.tuples(QUERY_KEYS, ROUTINGS), min_size=1, max_size=4))
    parts = []
    for key, value in [("query", "q"), *pairs]:
        kmask = draw(st.lists(st.booleans(), max_size=len(key)))
        vmask = draw(st.lists(st.booleans(), max_size=len(value)))
        parts.append(f"{encode(key, kmask)}={encode(value, vmask)}")
    return "&".join(parts).encode()


@given(query=monitor_queries())
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_classification_parses_the_query_as_the_handler(query: bytes) -> None:
    handler_routing = parse_pairs(query.decode(), "query string").get("routing", "") or "local"
    forwards = handler_routing.partition(":")[0] not in ("local", "dynamic")
    assert is_forward("/api/pools/1.0/monitor", query, 0) == forwards


PATHS = st.sampled_from(
    ["/api/nodes/{n}/workers", "/api/nodes/{n}/system_stats/", "/api/pools/1.0/monitor",
     "/api/pools/{n}.0/monitor", "/api//nodes/{n}/workers", "/api/nodes/{n}/bdevs?x=1"]
)  # fmt: skip
NODES = st.sampled_from(["1", "01", "0", "local", "self", "2", "%31", "+1", " 1", "1 "])


@given(template=PATHS, node=NODES, query=monitor_queries())
@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
async def test_every_peer_call_holds_a_forward_slot(
    tmp_path: Any, viz_root: Any, template: str, node: str, query: bytes
) -> None:
    """Whatever the path and query, a request that reaches a peer holds a forward slot."""
    from dashboard import create_app

    from .conftest import make_runtime

    runtime = make_runtime(tmp_path, viz_root)
    runtime.install_admin_pool()
    app = create_app(runtime, runtime.settings.viz)
    admission = dashboard_state(app).admission
    held: list[int] = []

    def answer(node_id: int, frame: dict[str, Any]) -> Any:
        held.append(admission.statistics()["forwards_in_flight"])
        return {"node_id": node_id}

    peers = FakePeers(runtime, answer)
    path = template.format(n=node)
    path, _, extra = path.partition("?")
    full = f"{path}?{query.decode()}" + (f"&{extra}" if extra else "")
    async with trio.open_nursery() as nursery:
        await nursery.start(runtime.workers.serve)
        status, _, _ = await call(app.test_client(), "GET", full)
        nursery.cancel_scope.cancel()
    assert status < 500
    assert len(held) == len(peers.calls)
    assert all(n > 0 for n in held), (full, held)
