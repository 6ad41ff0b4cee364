"""/metrics: Prometheus text from a per-app registry."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing
from prometheus_client.parser import text_string_to_metric_families

from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakePeers, FakeStatistics
from dashboard import create_app


async def scrape(client: Any) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    text = await response.get_data(as_text=True)
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


async def test_http_requests_by_route_pattern(client: Any) -> None:
    await client.get("/api/health")
    await client.get("/api/health")
    await client.get("/api/nodes/local/workers")
    await client.get("/api/nodes/9/workers")
    await client.get("/no/such/thing")
    m = await scrape(client)
    key = "rt_http_requests_total"
    assert m[(key, (("method", "GET"), ("route", "/api/health"), ("status", "200")))] == 2
    assert m[(key, (("method", "GET"), ("route", "/api/nodes/{node}/workers"),
                    ("status", "200")))] == 1  # fmt: skip
    assert m[(key, (("method", "GET"), ("route", "/api/nodes/{node}/workers"),
                    ("status", "400")))] == 1  # fmt: skip
    assert m[(key, (("method", "GET"), ("route", "<unmatched>"), ("status", "404")))] == 1


async def test_forward_latency_histogram(
    client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    await client.get("/api/nodes/1/workers")
    peers.hang(1)
    await client.get("/api/nodes/1/workers")
    await client.get("/api/nodes/local/workers")  # local: not a forward
    m = await scrape(client)
    ok = (("outcome", "ok"), ("query", "workers"))
    err = (("outcome", "error"), ("query", "workers"))
    assert m[("rt_forward_seconds_count", ok)] == 1
    assert m[("rt_forward_seconds_count", err)] == 1
    assert m[("rt_forward_seconds_bucket", (("le", "2.5"), *err))] == 0
    assert m[("rt_forward_seconds_sum", err)] == pytest.approx(5.0, abs=0.1)  # the bound


async def test_membership_and_swim(client: Any, runtime: Runtime) -> None:
    runtime.membership.stats = FakeStatistics(  # type: ignore[attr-defined]
        probes=10, suspicions=2, refutations=1, refused_incarnation=5, epochs=1, slow_ticks=3,
        sent_packets={"ping": 7, "ack": 3}, recv_packets={"ack": 6}, dropped={"malformed": 4},
    )  # fmt: skip
    m = await scrape(client)
    assert m[("rt_members", (("state", "alive"),))] == 2
    assert m[("rt_members", (("state", "dead"),))] == 1
    assert m[("rt_members", (("state", "suspected"),))] == 0
    assert m[("rt_is_leader", ())] == 1
    assert m[("rt_swim_probes_total", ())] == 10
    assert m[("rt_swim_suspicions_total", ())] == 2
    assert m[("rt_swim_refutations_total", ())] == 1
    assert m[("rt_swim_refused_incarnation_total", ())] == 5
    assert m[("rt_swim_epochs_total", ())] == 1
    assert m[("rt_swim_slow_ticks_total", ())] == 3
    assert m[("rt_swim_packets_total", (("direction", "sent"), ("type", "ping")))] == 7
    assert m[("rt_swim_packets_total", (("direction", "received"), ("type", "ack")))] == 6
    assert m[("rt_swim_dropped_total", (("reason", "malformed"),))] == 4
    text = await (await client.get("/metrics")).get_data(as_text=True)
    assert "# HELP rt_swim_packets_total SWIM packets by message type" in text


async def test_membership_without_statistics(client: Any, runtime: Runtime) -> None:
    runtime.membership.statistics = None  # type: ignore[attr-defined]
    m = await scrape(client)
    assert ("rt_members", (("state", "alive"),)) in m
    assert not any(name.startswith("rt_swim_") for name, _ in m)


async def test_workers_and_pools(client: Any, runtime: Runtime) -> None:
    m = await scrape(client)
    for w in range(runtime.settings.runtime.workers):
        assert m[("rt_worker_queued_tasks", (("worker", str(w)),))] == 0
        assert ("rt_worker_tasks_processed_total", (("worker", str(w)),)) in m
    assert m[("rt_pools", (("mod_name", "rt_admin"),))] == 1
    assert m[("rt_http_slots", (("kind", "max_threads"),))] == 16


async def test_registry_per_app(runtime: Runtime) -> None:
    a = create_app(runtime, runtime.settings.viz).test_client()
    b = create_app(runtime, runtime.settings.viz).test_client()
    await a.get("/api/health")
    mb = await scrape(b)
    assert not any(
        name == "rt_http_requests_total" and ("route", "/api/health") in labels
        for name, labels in mb
    )


async def _gone(app: Any, path: str, parts: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One request whose client sends ``parts`` and then hangs up 1 s later (ASGI, as
    hypercorn hands it over); what the app sent back."""
    scope = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
        "method": "POST" if parts else "GET", "scheme": "http", "path": path,
        "raw_path": path.encode(), "query_string": b"", "root_path": "",
        "headers": [(b"host", b"127.0.0.1"), (b"content-length", b"1000")] if parts else
                   [(b"host", b"127.0.0.1")],
        "client": ("127.0.0.1", 50000), "server": ("127.0.0.1", 8080), "extensions": {},
    }  # fmt: skip
    incoming = [*parts] if parts else [{"type": "http.request", "body": b"", "more_body": False}]
    out: list[dict[str, Any]] = []

    async def receive() -> Any:
        if incoming:
            return incoming.pop(0)
        # What is tested, not a guess: the client hangs up 1 s after its last part, while the
        # app still waits for the rest of the body or for the silent peer (its bound is 5 s).
        # The caller runs on trio's MockClock, so the second is virtual and always elapses
        # before the forward bound, whatever the machine's speed.
        await trio.sleep(1.0)
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        out.append(message)

    with trio.fail_after(30):
        await app(scope, receive, send)
    return out


async def test_client_gone_before_the_answer_is_499_not_500(
    app: Any, client: Any, peers: FakePeers, autojump_clock: trio.testing.MockClock
) -> None:
    """Issue 12: clients that hung up mid-body were counted as 500s in /metrics. A client
    that leaves before any answer is counted as 499 (nginx's "client closed request"): in the
    body intake, and in a handler cancelled by the disconnect (a forward to a silent peer)."""
    part = [{"type": "http.request", "body": b"a=1", "more_body": True}]
    assert await _gone(app, "/api/pools/compose", part) == []
    peers.hang(1)
    assert await _gone(app, "/api/nodes/1/workers", []) == []
    m = await scrape(client)
    key = "rt_http_requests_total"
    assert not any(name == key and ("status", "500") in labels for name, labels in m)
    assert m[(key, (("method", "POST"), ("route", "<unmatched>"), ("status", "499")))] == 1
    assert m[(key, (("method", "GET"), ("route", "/api/nodes/{node}/workers"),
                    ("status", "499")))] == 1  # fmt: skip
