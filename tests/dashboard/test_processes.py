"""The dashboard on real node processes (``rt_run start``): launch rules, and forwards to a
killed and to a paused (SIGSTOP) peer while local routes keep answering.

Every process runs on the tests' harness (``tests.support``), which ends it at teardown
(SIGCONT first, then SIGTERM, then SIGKILL), whatever the test did.
"""

from __future__ import annotations

import re
import sys
from typing import Any

import httpx
import pytest
import trio
from prometheus_client.parser import text_string_to_metric_families

from cluster.local import free_port
from tests.support import RETRY_ON, Child, Harness, hold_port, wait_for, wait_for_async

pytestmark = pytest.mark.slow


def up_line(port: int) -> str:
    return rf"node \d+ up: runtime 127\.0\.0\.1:{port}"


# -- launch rules ----------------------------------------------------------------------------


def test_daemon_serves_by_default_and_logs_bound_port(harness: Harness) -> None:
    url = harness.dashboard_url(harness.start_node())
    assert not url.endswith(":0")
    r = httpx.get(url + "/api/health", timeout=10)
    assert r.status_code == 200
    assert r.json()["ok"] is True
    config = httpx.get(url + "/api/config", timeout=10).json()
    assert config["viz_port"] == int(url.rsplit(":", 1)[1])  # the bound port, not 0
    page = httpx.get(url + "/", timeout=10)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("flags", "env"), [(("--no-viz",), {}), ((), {"RT_VIZ_ENABLE": "0"})], ids=["flag", "env"]
)
def test_daemon_without_dashboard(
    harness: Harness, flags: tuple[str, ...], env: dict[str, str]
) -> None:
    node = harness.start_node(*flags, env=env)
    # the node logs "up" after it has started its dashboard or decided not to
    harness.wait_log(node, up_line(node.port))
    assert "Viz: dashboard listening" not in harness.log_text(node)


EMBEDDED = """
import logging, sys, trio
from dataclasses import replace
logging.basicConfig(level=logging.INFO)
from cluster import load_settings, open_node
async def main():
    s = load_settings("embedded")
    s = replace(s, networking=replace(s.networking, port=int(sys.argv[1])),
                workload=replace(s.workload, enabled=False))
    async with open_node(s) as node:
        print("EMBEDDED dashboard", node.dashboard_url, flush=True)
        await trio.sleep(float(sys.argv[2]))
trio.run(main)
"""


@pytest.mark.parametrize("enable", ["", "1"])
def test_embedded_runtime_serves_only_when_enabled(harness: Harness, enable: str) -> None:
    port = free_port()
    env = {"RT_VIZ_ENABLE": enable} if enable else {}
    emb = harness.start([sys.executable, "-c", EMBEDDED, str(port), "3"], "emb", env=env)
    url = harness.wait_log(emb, r"EMBEDDED dashboard (\S+)").group(1)
    text = harness.log_text(emb)
    if enable:
        assert url.startswith("http://127.0.0.1:")
        assert httpx.get(url + "/api/health", timeout=10).status_code == 200
        assert "Viz: dashboard listening at " + url in text
    else:
        assert url == "None"


def test_taken_port_warns_and_node_runs_on(harness: Harness) -> None:
    with hold_port() as viz_port:
        node = harness.start_node(viz_port=viz_port)
        harness.wait_log(node, up_line(node.port))
        text = harness.log_text(node)
        assert re.search(
            rf"Viz: could not listen on 127\.0\.0\.1:{viz_port} \(.+\); dashboard disabled", text
        )
        assert "Viz: dashboard listening" not in text
        harness.wait_ready(node)  # it runs on: it answers its RPC
        assert harness.alive(node)


MISSING_LIBRARY = """
import sys
sys.modules["hypercorn"] = None
sys.modules["quart_trio"] = None
from cluster.node.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_missing_http_library_warns_and_node_runs(harness: Harness) -> None:
    port = free_port()
    argv = [sys.executable, "-c", MISSING_LIBRARY, "start", "--port", str(port)]
    node = harness.start(argv, "nolib", port=port)
    harness.wait_log(node, up_line(port))
    text = harness.log_text(node)
    assert "Viz: runtime built without the HTTP server library" in text
    assert "dashboard absent" in text
    assert "Viz: dashboard listening" not in text
    harness.wait_ready(node)  # it runs on: it answers its RPC
    assert harness.alive(node)


# -- forwards to real peers ------------------------------------------------------------------


def two_nodes(harness: Harness) -> tuple[str, Child]:
    """Nodes 0 and 1 of one hostfile; returns node 0's dashboard URL and node 1."""
    ports = [free_port(), free_port()]
    hostfile = harness.workdir / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    # Node 1 first, so node 0 joins at once (a seed that is not up yet is retried later).
    peer = harness.start_node("--hostfile", str(hostfile), port=ports[1], name="n1")
    harness.dashboard_url(peer)
    n0 = harness.start_node("--hostfile", str(hostfile), port=ports[0], name="n0")
    url = harness.dashboard_url(n0)

    def table() -> list[tuple[int, str]]:
        nodes = httpx.get(url + "/api/topology", timeout=10).json()["nodes"]
        return [(n["node_id"], n["state"]) for n in nodes]

    wait_for(
        "node 1 alive in node 0's table",
        table,
        until=lambda t: t == [(0, "alive"), (1, "alive")],
        retry_on=(*RETRY_ON, httpx.HTTPError),
    )
    return url, peer


def test_forward_to_live_then_killed_peer(harness: Harness) -> None:
    url, peer = two_nodes(harness)
    for query, key in (("workers", "workers"), ("system_stats", "entries"),
                       ("containers", "containers"), ("bdevs", "devices")):  # fmt: skip
        r = httpx.get(f"{url}/api/nodes/1/{query}", timeout=10)
        assert r.status_code == 200, r.text
        assert list(r.json())[:2] == ["node_id", key]
        assert r.json()["node_id"] == 1
    harness.kill(peer)
    r = httpx.get(f"{url}/api/nodes/1/workers", timeout=10)
    assert r.status_code == 503
    assert list(r.json()) == ["error"]
    # A dead peer's port refuses at once: the answer says so, it did not wait out the bound.
    assert "timed out" not in r.json()["error"], r.json()
    assert httpx.get(url + "/api/health", timeout=10).status_code == 200


async def forwards_in_flight(http: httpx.AsyncClient) -> float:
    """The node's forward slots taken now (``rt_http_slots{kind="forwards_in_flight"}`` of
    its ``/metrics``: a forward holds its slot until its answer or its 5 s bound)."""
    r = await http.get("/metrics")
    r.raise_for_status()
    for family in text_string_to_metric_families(r.text):
        for sample in family.samples:
            if sample.name == "rt_http_slots" and sample.labels == {"kind": "forwards_in_flight"}:
                return sample.value
    raise AssertionError(f"no forwards_in_flight slot gauge in /metrics: {r.text}")


async def test_paused_peer_forwards_time_out_while_local_routes_answer(harness: Harness) -> None:
    url, peer = two_nodes(harness)
    harness.pause(peer)
    statuses: list[tuple[int, Any]] = []
    answered_locally: list[int] = []  # forwards ended when each local round had answered
    async with httpx.AsyncClient(base_url=url, timeout=30,
                                 limits=httpx.Limits(max_connections=32)) as http:  # fmt: skip

        async def forward(query: str) -> None:
            r = await http.get(f"/api/nodes/1/{query}")
            statuses.append((r.status_code, r.json()))

        async with trio.open_nursery() as nursery:
            for i in range(12):
                nursery.start_soon(forward, ("workers", "system_stats", "containers")[i % 3])
            await wait_for_async(
                "all 12 forwards to paused node 1 in flight (node 0's forward slots)",
                lambda: forwards_in_flight(http),
                until=lambda n: n == 12,
                timeout=10,
                retry_on=(*RETRY_ON, httpx.HTTPError),
            )
            for _ in range(3):
                for path in ("/api/health", "/api/topology", "/api/nodes/local/workers",
                             "/api/pools", "/metrics"):  # fmt: skip
                    r = await http.get(path)
                    assert r.status_code == 200, (path, r.text)
                answered_locally.append(len(statuses))
                await trio.sleep(0.3)
    # Every local round answered while all 12 forwards were still waiting at the paused peer
    # (by the order of events: none of them had ended), and each forward ended at its bound.
    assert answered_locally == [0, 0, 0]
    assert [s for s, _ in statuses] == [503] * 12
    assert all(re.fullmatch(r"monitor '\w+' timed out after 5s", b["error"]) for _, b in statuses)
