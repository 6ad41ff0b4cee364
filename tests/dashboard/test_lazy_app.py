"""A served dashboard builds its quart app on the first request that passes the door
(``dashboard.app`` rule 7, issue 33): a node nobody watches never builds it. Health is
answered and counted before; the first real request builds it once and is answered; a
served app built late is started and shut down with the server."""

from __future__ import annotations

from dataclasses import replace

import httpx
import trio

from cluster.runtime.runtime import Runtime
from dashboard import serve_dashboard
from dashboard.app import Dashboard
from dashboard.serve import _Served


def _client(dashboard: Dashboard) -> httpx.AsyncClient:
    transport = httpx.ASGITransport(app=dashboard.asgi)
    return httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1")


async def test_health_is_answered_and_counted_without_the_app(runtime: Runtime) -> None:
    dashboard = Dashboard(runtime, replace(runtime.settings.viz, port=80))
    async with _client(dashboard) as http:
        for _ in range(3):
            assert (await http.get("/api/health")).json()["node_id"] == 0
        assert dashboard._app is None
        r = await http.get("/api/topology")
        assert r.status_code == 200
        assert dashboard._app is not None
        metrics = (await http.get("/metrics")).text
        # the door's answers, counted from the first
        assert (
            'rt_http_requests_total{method="GET",route="/api/health",status="200"} 3.0' in metrics
        )


async def test_concurrent_first_requests_build_the_app_once(runtime: Runtime) -> None:
    dashboard = Dashboard(runtime, replace(runtime.settings.viz, port=80))
    built: list[object] = []
    build = Dashboard.app.fget

    class Counting(Dashboard):
        @property
        def app(self):  # type: ignore[no-untyped-def]
            if self._app is None:
                built.append(self)
            return build(self)  # type: ignore[misc]

    dashboard.__class__ = Counting
    statuses: list[int] = []
    async with _client(dashboard) as http, trio.open_nursery() as nursery:
        for path in ("/api/topology", "/api/health?via=app", "/api/topology", "/api/nope"):

            async def get(path: str = path) -> None:
                statuses.append((await http.get(path)).status_code)

            nursery.start_soon(get)
    assert len(built) == 1
    assert sorted(statuses) == [200, 200, 200, 404]


async def test_an_app_built_while_served_is_started_and_shut_down(runtime: Runtime) -> None:
    dashboard = Dashboard(runtime, replace(runtime.settings.viz, port=80))
    served = _Served(dashboard)
    to_server, events = trio.open_memory_channel[dict[str, str]](4)
    sent: list[str] = []
    up = trio.Event()

    async def send(message: dict[str, str]) -> None:
        sent.append(message["type"])
        up.set()

    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(served, {"type": "lifespan"}, events.receive, send)
            await to_server.send({"type": "lifespan.startup"})
            await up.wait()  # as hypercorn serves only once the lifespan has started
            async with _client(dashboard) as http:
                assert (await http.get("/api/topology")).status_code == 200
            app = dashboard.app
            assert app.nursery is dashboard.nursery  # started in the server's nursery
            ended: list[bool] = []
            app.after_serving(lambda: ended.append(True))
            await to_server.send({"type": "lifespan.shutdown"})
    assert sent == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert ended == [True]  # the app's shutdown ran


async def test_served_over_a_socket_the_app_is_built_on_first_use(runtime: Runtime) -> None:
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            viz = replace(runtime.settings.viz, port=0)
            _, port = await nursery.start(serve_dashboard, runtime, viz)
            async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}") as http:
                assert (await http.get("/api/health")).status_code == 200
                r = await http.get("/api/topology")
                assert r.status_code == 200, r.text
            nursery.cancel_scope.cancel()  # the lifespan ends with the app's shutdown
