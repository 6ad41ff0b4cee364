"""Per-node routes: answered locally for local/self/own id, forwarded to peers as one monitor
task, 400 for a bad node id, 503 within the 5 s forward bound for a silent peer."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakePeers

from .conftest import call

QUERIES = ("workers", "system_stats", "containers", "bdevs")
FIRST_KEYS = {
    "workers": "workers",
    "system_stats": "entries",
    "containers": "containers",
    "bdevs": "devices",
}


@pytest.mark.parametrize("node", ["local", "self", "0"])
@pytest.mark.parametrize("query", QUERIES)
async def test_local_answers_without_network(
    client: Any, peers: FakePeers, node: str, query: str
) -> None:
    status, body, _ = await call(client, "GET", f"/api/nodes/{node}/{query}")
    assert status == 200
    assert list(body) == ["node_id", FIRST_KEYS[query]]
    assert body["node_id"] == 0
    assert peers.calls == []


async def test_worker_rows(client: Any, runtime: Runtime) -> None:
    _, body, _ = await call(client, "GET", "/api/nodes/local/workers")
    assert len(body["workers"]) == runtime.settings.runtime.workers
    assert list(body["workers"][0]) == [
        "worker_id", "is_running", "is_active", "idle_iterations", "num_queued_tasks",
        "num_blocked_tasks", "num_periodic_tasks", "num_retry_tasks", "suspend_period_us",
        "num_tasks_processed", "load",
    ]  # fmt: skip


async def test_containers_include_cost_models(client: Any) -> None:
    _, body, _ = await call(client, "GET", "/api/nodes/local/containers")
    admin = body["containers"][0]
    assert list(admin)[:4] == ["pool_id", "pool_name", "mod_name", "container_id"]
    assert {"methods", "learning_rate"} <= set(admin)


async def test_system_stats_min_event_id(client: Any, runtime: Runtime) -> None:
    runtime.stats.sample()
    runtime.stats.sample()
    _, body, _ = await call(client, "GET", "/api/nodes/local/system_stats?min_event_id=1")
    assert [e["event_id"] for e in body["entries"]] == [1]
    status, body, _ = await call(client, "GET", "/api/nodes/local/system_stats?min_event_id=x")
    assert (status, body) == (400, {"error": "min_event_id must be an integer, got 'x'"})


@pytest.mark.parametrize(
    "value", ["%D9%A1", "%201", "1%20", "1_0", "%2B1", "01", "-0", "0x1", "1.5", "nan", "9" * 5000]
)
async def test_min_event_id_is_strict(client: Any, peers: FakePeers, value: str) -> None:
    """Issue 12: an Arabic-Indic digit, a space before the digit or ``1_0`` were read as a
    number (Python's ``int``) and answered 200. The runtime parses the parameter where the
    query is answered (``cluster.runtime.admin``, with ``cluster.ground.parse``): 400 over
    HTTP."""
    target = f"/api/nodes/local/system_stats?min_event_id={value}"
    status, body, _ = await call(client, "GET", target)
    assert status == 400, (value, body)
    assert list(body) == ["error"]
    assert body["error"].startswith("min_event_id"), body
    assert peers.calls == []


@pytest.mark.parametrize("query", QUERIES)
async def test_peer_is_one_forwarded_monitor_task(
    client: Any, peers: FakePeers, query: str
) -> None:
    status, body, _ = await call(client, "GET", f"/api/nodes/1/{query}?min_event_id=7&x=1")
    assert status == 200
    assert body["node_id"] == 1
    params = {"min_event_id": "7"} if query == "system_stats" else {}
    assert peers.calls == [(1, {"k": "monitor", "query": query, "params": params})]


@pytest.mark.parametrize("node", ["9", "-1", "x", "1.0", "01x", "9999999999"])
async def test_bad_node_id_is_400(client: Any, peers: FakePeers, node: str) -> None:
    status, body, _ = await call(client, "GET", f"/api/nodes/{node}/workers")
    assert status == 400
    assert body == {
        "error": f"unknown or malformed node id: {node} "
        "(use a node id from /api/topology, or 'local')"
    }
    assert peers.calls == []


@pytest.mark.parametrize(
    ("node", "query"),
    [(1, "workers"), (2, "system_stats")],
    ids=["alive-in-table", "dead-in-table"],
)
async def test_silent_peer_is_503_after_5s(
    client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock, node: int, query: str
) -> None:
    """A silent peer costs the 5 s bound, then 503; node 2, dead in the host table, can still
    be asked and costs no more."""
    peers.hang(node)
    start = trio.current_time()
    status, body, _ = await call(client, "GET", f"/api/nodes/{node}/{query}")
    assert (status, body) == (503, {"error": f"monitor '{query}' timed out after 5s"})
    assert trio.current_time() - start == pytest.approx(5.0, abs=0.1)


async def test_refusing_peer_is_503_at_once(
    client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    peers.refuse(1)
    start = trio.current_time()
    status, body, _ = await call(client, "GET", "/api/nodes/1/bdevs")
    assert status == 503
    assert body["error"].startswith("node 1 did not answer monitor 'bdevs'")
    assert trio.current_time() - start < 0.1


async def test_peer_error_status_passes_through(client: Any, peers: FakePeers) -> None:
    from cluster.ground.errors import BadRequest

    def answer(node_id: int, frame: dict[str, Any]) -> Any:
        raise BadRequest("min_event_id must be an integer, got 'q'")

    peers.answer = answer
    status, body, _ = await call(client, "GET", "/api/nodes/1/system_stats?min_event_id=q")
    assert (status, body) == (400, {"error": "min_event_id must be an integer, got 'q'"})


async def test_local_routes_answer_while_forwards_hang(
    client: Any, peers: FakePeers, runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    """More forwards to a silent peer than there are request slots: health still answers at
    once, and every forward ends with 503 at the 5 s bound."""
    peers.hang(1)
    slots = runtime.settings.viz.max_threads
    results: list[tuple[int, float]] = []
    start = trio.current_time()

    async def forward() -> None:
        status, _, _ = await call(client, "GET", "/api/nodes/1/workers")
        results.append((status, trio.current_time() - start))

    async with trio.open_nursery() as nursery:
        for _ in range(slots + 4):
            nursery.start_soon(forward)
        await trio.testing.wait_all_tasks_blocked()
        assert 0 < peers.in_flight < slots  # forwards never take every slot
        t0 = trio.current_time()
        for path in ("/api/health", "/api/topology", "/api/nodes/local/workers", "/api/routes"):
            status, _, _ = await call(client, "GET", path)
            assert status == 200
        assert trio.current_time() - t0 < 0.01  # no waiting behind the forwards
    assert [s for s, _ in results] == [503] * (slots + 4)
    # queued forwards ran after the first batch: at most two 5 s rounds, never unbounded
    assert max(t for _, t in results) <= 10.1
