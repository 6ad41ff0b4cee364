"""Issue 14 on the runtime fakes: ``/api/events`` (the membership history, strict cursor),
``/api/faults``, the per-node ``events``/``faults``/``process`` queries, the topology's
incarnation/since/view, ``/api/cluster/views`` (one round trip per observer, within the bound
when peers hang) and the ``/views`` page. Times are trio's (autojump clock where a peer hangs)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
import trio.testing
from quart_trio import QuartTrio

from cluster.ground.errors import BadRequest, PeerUnreachable
from cluster.local import free_port
from cluster.rpc import Faults, rpc_call
from cluster.runtime import FORWARD_TIMEOUT, ProcessProbe, SingleNode, build_views
from cluster.runtime.admin import admin_query
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers, FakeStatistics
from dashboard import dashboard_state
from dashboard.admission import is_forward
from tests.support import HOST, RETRY_ON, Child, Harness, wait_for

from .conftest import call, make_runtime
from .test_metrics import scrape

JSON = dict[str, Any]


def fake(runtime: Runtime) -> FakeMembership:
    assert isinstance(runtime.membership, FakeMembership)
    return runtime.membership


# -- /api/events ------------------------------------------------------------------------------


async def test_events_empty_history(client: Any, runtime: Runtime) -> None:
    status, body, _ = await call(client, "GET", "/api/events")
    boot = runtime.process.boot
    assert (status, body) == (
        200, {"node_id": 0, "events": [], "next": 0, "dropped": 0, "boot": boot}
    )  # fmt: skip
    assert len(boot) == 16


def test_every_process_start_has_its_own_boot() -> None:
    """A cursor (``next``) is good only with its ``boot``: a restarted node counts from 1."""
    assert len({ProcessProbe().boot for _ in range(50)}) == 50


async def test_events_page_with_cursor(client: Any, runtime: Runtime) -> None:
    table = fake(runtime)
    table.change(1, "suspected", cause="suspect", wall=1000.5, mono=7.25)
    table.change(1, "alive", cause="refute", wall=1001.0)
    table.change(2, "alive", cause="alive", wall=1002.0)
    status, body, _ = await call(client, "GET", "/api/events")
    assert status == 200
    assert list(body) == ["node_id", "events", "next", "dropped", "boot"]
    assert body["events"][0] == {
        "seq": 1, "wall": 1000.5, "mono": 7.25, "observer": 0, "subject": 1, "old": "alive",
        "new": "suspected", "incarnation": 0, "cause": "suspect",
    }  # fmt: skip
    assert [e["seq"] for e in body["events"]] == [1, 2, 3]
    assert body["next"] == 3
    _, body, _ = await call(client, "GET", "/api/events?after=1&limit=1")
    assert ([e["seq"] for e in body["events"]], body["next"]) == ([2], 2)
    _, body, _ = await call(client, "GET", "/api/events?after=3")
    assert (body["events"], body["next"]) == ([], 3)


async def test_stale_cursor_reports_what_the_ring_dropped(client: Any, runtime: Runtime) -> None:
    table = fake(runtime)
    table.capacity = 4
    for i in range(10):
        table.change(1, "alive" if i % 2 else "suspected", wall=float(i))
    _, body, _ = await call(client, "GET", "/api/events?after=2&limit=5000")
    assert [e["seq"] for e in body["events"]] == [7, 8, 9, 10]
    assert (body["next"], body["dropped"]) == (10, 4)


BAD_PARAMS = [
    "after=-1", "after=abc", "after=1e3", "after=%D9%A1", "after=%201", "after=01", "after=",
    "after=1.0", "after=99999999999999999999", "limit=0", "limit=5001", "limit=-5", "limit=",
    "limit=%EF%BC%95", "limit=5%00", "after=1&limit=x",
]  # fmt: skip


@pytest.mark.parametrize("query", BAD_PARAMS)
@pytest.mark.parametrize("path", ["/api/events", "/api/nodes/local/events", "/api/nodes/1/events"])
async def test_bad_cursor_or_limit_is_400_before_any_forward(
    client: Any, peers: FakePeers, path: str, query: str
) -> None:
    status, body, _ = await call(client, "GET", f"{path}?{query}")
    assert status == 400, (path, query, body)
    assert list(body) == ["error"]
    assert body["error"].startswith(("after:", "limit:")), body
    assert peers.calls == []  # refused here, never a wait on a peer


async def test_limit_bounds_are_accepted(client: Any, runtime: Runtime) -> None:
    for _ in range(3):
        fake(runtime).change(1, "alive")
    for query, count in (("limit=1", 1), ("limit=5000", 3), ("after=0&limit=2", 2)):
        status, body, _ = await call(client, "GET", f"/api/events?{query}")
        assert (status, len(body["events"])) == (200, count), query


async def test_peer_events_forward_only_the_cursor(client: Any, peers: FakePeers) -> None:
    status, body, _ = await call(client, "GET", "/api/nodes/1/events?after=3&limit=2&x=1")
    assert status == 200
    assert peers.calls == [(1, {"k": "monitor", "query": "events",
                                "params": {"after": "3", "limit": "2"}})]  # fmt: skip
    assert body["node_id"] == 1


async def test_forwarded_events_are_timed_into_metrics(client: Any, peers: FakePeers) -> None:
    await call(client, "GET", "/api/nodes/1/events")
    m = await scrape(client)
    assert m[("rt_forward_seconds_count", (("outcome", "ok"), ("query", "events")))] == 1


# -- /api/faults, process, topology -----------------------------------------------------------


async def test_faults_empty_then_set(client: Any, runtime: Runtime) -> None:
    status, body, _ = await call(client, "GET", "/api/faults")
    assert (status, body) == (
        200,
        {
            "node_id": 0,
            "blocked": [],
            "loss": {},
            "delay": {},
            "cut": [],
            "clock": {"offset": 0.0, "rate": 1.0},
            "disk": {},
            "active": False,
        },
    )
    faults = fake(runtime).faults
    faults.blocked.update({2, 1})
    faults.loss_pct = 10.0
    faults.peer_delay_ms[1] = 50.0
    faults.cut.add(3)
    faults.clock_offset, faults.clock_rate = -86400.0, 2.0
    _, body, _ = await call(client, "GET", "/api/faults")
    assert body == {
        "node_id": 0,
        "blocked": [1, 2],
        "loss": {"all": 10.0},
        "delay": {"1": 50.0},
        "cut": [3],
        "clock": {"offset": -86400.0, "rate": 2.0},
        "disk": {},
        "active": True,
    }
    _, local, _ = await call(client, "GET", "/api/nodes/local/faults")
    assert local == body


async def test_peer_faults_and_process_are_forwarded(client: Any, peers: FakePeers) -> None:
    for query in ("faults", "process"):
        status, body, _ = await call(client, "GET", f"/api/nodes/1/{query}")
        assert (status, body["node_id"], body["query"]) == (200, 1, query)
    assert [c[1]["query"] for c in peers.calls] == ["faults", "process"]


async def test_process_figures_of_this_process(client: Any, runtime: Runtime) -> None:
    fake(runtime).stats = FakeStatistics(health_score=2, loop_lag=0.0125, loop_lag_max=0.5)
    fake(runtime).table[0].incarnation = 4
    runtime.stats.sample()
    status, body, _ = await call(client, "GET", "/api/nodes/local/process")
    assert status == 200
    assert list(body) == [
        "node_id", "pid", "runtime_port", "dashboard_url", "uptime_s", "cpu_percent",
        "rss_bytes", "incarnation", "health_score", "loop_lag_ms", "loop_lag_max_ms", "machine",
    ]  # fmt: skip
    assert body["pid"] == os.getpid()
    assert body["runtime_port"] == 9413  # the port of this node's own row
    assert body["dashboard_url"] is None
    assert body["uptime_s"] >= 0
    assert body["rss_bytes"] > 0
    assert body["cpu_percent"] >= 0
    assert (body["incarnation"], body["health_score"]) == (4, 2)
    assert (body["loop_lag_ms"], body["loop_lag_max_ms"]) == (12.5, 500.0)
    assert set(body["machine"]) == {"cpu_percent", "memory_percent"}
    assert 0 <= body["machine"]["memory_percent"] <= 100
    runtime.viz_address = ("127.0.0.1", 8123)
    _, body, _ = await call(client, "GET", "/api/nodes/0/process")
    assert body["dashboard_url"] == "http://127.0.0.1:8123"


async def test_topology_has_incarnation_since_and_view(client: Any, runtime: Runtime) -> None:
    table = fake(runtime)
    table.change(1, "suspected", wall=1234.5)
    table.table[1].incarnation = 7
    _, body, _ = await call(client, "GET", "/api/topology")
    rows = {n["node_id"]: n for n in body["nodes"]}
    assert (rows[1]["incarnation"], rows[1]["since"], rows[1]["view"]) == (7, 1234.5, "suspect")
    assert rows[1]["state"] == "suspected"  # the existing field is unchanged
    assert (rows[0]["since"], rows[2]["view"]) == (None, "dead")
    table.change(1, "probe_failed")
    table.change(2, "left")
    _, body, _ = await call(client, "GET", "/api/topology")
    rows = {n["node_id"]: n for n in body["nodes"]}
    assert (rows[1]["view"], rows[2]["view"], rows[2]["state"]) == ("alive", "left", "dead")


def test_a_lone_runtime_has_no_history_and_no_faults(tmp_path: Path, viz_root: Path) -> None:
    rt = make_runtime(tmp_path, viz_root)
    rt.membership = SingleNode(0, "127.0.0.1", 9413)
    assert admin_query(rt, "events", {"after": "5"}) == {
        "node_id": 0, "events": [], "next": 5, "dropped": 0, "boot": rt.process.boot
    }  # fmt: skip
    assert admin_query(rt, "faults", {})["active"] is False
    process = admin_query(rt, "process", {})
    assert (process["health_score"], process["loop_lag_ms"], process["incarnation"]) == (
        None,
        None,
        0,
    )
    with pytest.raises(BadRequest, match="limit"):
        admin_query(rt, "events", {"limit": "0"})


# -- /api/cluster/views -----------------------------------------------------------------------


def rows_answer(rows: dict[int, Any]) -> Any:
    """A FakePeers answer: each peer's ``view`` row from ``rows``; a peer not in ``rows`` is
    gone (its port refuses)."""

    def answer(node_id: int, request: JSON) -> Any:
        assert request["query"] == "view"
        if node_id not in rows:
            raise PeerUnreachable("[Errno 111] Connection refused")
        row = rows[node_id]
        return row if not isinstance(row, dict) else {"node_id": node_id, **row}

    return answer


def row(views: dict[str, str], leader: int | None = 0) -> JSON:
    return {"leader": leader, "views": views, "faults": {"blocked": [], "active": False}}


AGREED = {"0": "alive", "1": "alive", "2": "dead"}


async def test_views_agree(client: Any, runtime: Runtime) -> None:
    peers = FakePeers(runtime, rows_answer({1: row(AGREED)}))  # node 2, held dead, is gone
    status, body, _ = await call(client, "GET", "/api/cluster/views")
    assert status == 200
    assert list(body) == [
        "node_id", "observers", "subjects", "views", "errors", "leaders", "faults", "agree",
    ]  # fmt: skip
    assert (body["observers"], body["subjects"]) == ([0, 1, 2], [0, 1, 2])
    assert body["views"] == {"0": AGREED, "1": AGREED, "2": None}
    assert body["errors"] == {"2": "unreachable"}
    assert body["leaders"] == {"0": 0, "1": 0, "2": None}
    assert body["faults"]["0"] == {
        "node_id": 0, "blocked": [], "loss": {}, "delay": {}, "cut": [],
        "clock": {"offset": 0.0, "rate": 1.0}, "disk": {}, "active": False,
    }  # fmt: skip
    assert body["faults"]["2"] is None
    assert body["agree"] is True
    assert sorted((n, c["query"]) for n, c in peers.calls) == [(1, "view"), (2, "view")]
    assert all(c["observe"] for _, c in peers.calls)  # the channel faults do not cut


@pytest.mark.parametrize(
    ("peer_row", "why"),
    [
        (row({**AGREED, "2": "suspect"}), "another view"),
        (row({"0": "alive", "1": "alive"}), "a subject unknown to the peer"),
        (row(AGREED, leader=1), "two leaders"),
    ],
)
async def test_views_disagree(client: Any, runtime: Runtime, peer_row: JSON, why: str) -> None:
    FakePeers(runtime, rows_answer({1: peer_row}))
    _, body, _ = await call(client, "GET", "/api/cluster/views")
    assert body["agree"] is False, why
    assert body["views"]["1"] == peer_row["views"]


async def test_subjects_are_every_id_seen(client: Any, runtime: Runtime) -> None:
    FakePeers(runtime, rows_answer({1: row({**AGREED, "7": "suspect"})}))
    _, body, _ = await call(client, "GET", "/api/cluster/views")
    assert body["subjects"] == [0, 1, 2, 7]
    assert body["observers"] == [0, 1, 2]


async def test_views_answer_within_the_bound_when_a_peer_hangs(
    client: Any, runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    fake(runtime).table = FakeMembership.of(5).table
    peers = FakePeers(runtime, rows_answer({i: row(AGREED) for i in range(5)}))
    peers.hang(2)
    peers.refuse(3)
    start = trio.current_time()
    status, body, _ = await call(client, "GET", "/api/cluster/views")
    took = trio.current_time() - start
    assert status == 200
    assert took == pytest.approx(FORWARD_TIMEOUT)  # the one deadline, not one per peer
    assert body["errors"] == {"2": "timeout", "3": "unreachable"}
    assert body["views"]["2"] is None
    assert body["views"]["3"] is None
    assert body["views"]["1"] == body["views"]["4"] == AGREED
    assert peers.in_flight == 0


async def test_peer_refusal_and_malformed_rows_are_short_errors(
    client: Any, runtime: Runtime
) -> None:
    fake(runtime).table = FakeMembership.of(6).table

    def answer(node_id: int, request: JSON) -> Any:
        if node_id == 1:
            raise BadRequest("unknown admin monitor query 'view' " + "x" * 200)
        return {
            2: {"views": {"0": "sleepy"}},
            3: {"views": {"01": "alive"}},
            4: ["not", "a", "map"],
            5: {"views": {"0": "alive"}, "leader": True},
        }[node_id]

    FakePeers(runtime, answer)
    _, body, _ = await call(client, "GET", "/api/cluster/views")
    assert body["errors"]["1"].startswith("unknown admin monitor query 'view' xxx")
    assert len(body["errors"]["1"]) <= 80
    assert {body["errors"][str(i)] for i in (2, 3, 4, 5)} == {"malformed answer"}
    assert body["agree"] is True  # only node 0 answered


async def test_the_other_side_of_a_partition_is_asked(client: Any, runtime: Runtime) -> None:
    """Node 0 blocks 1 and holds 2 dead; both are alive and see 0 dead: their rows are asked
    (faults do not cut the views channel) and the matrix disagrees, naming who blocks whom."""
    fake(runtime).faults.blocked.update({1, 2})
    other_side = {"0": "dead", "1": "alive", "2": "alive"}
    cut = {"blocked": [0], "active": True}
    FakePeers(
        runtime, rows_answer({n: {**row(other_side, leader=1), "faults": cut} for n in (1, 2)})
    )
    _, body, _ = await call(client, "GET", "/api/cluster/views")
    assert body["errors"] == {}
    assert body["views"]["1"] == body["views"]["2"] == other_side
    assert body["faults"]["0"]["blocked"] == [1, 2]
    assert body["faults"]["1"] == cut
    assert body["leaders"] == {"0": 0, "1": 1, "2": 1}
    assert body["agree"] is False


def test_build_views_is_pure() -> None:
    rows = {0: {"views": {0: "alive", 1: "suspect"}, "leader": 0, "faults": None}}
    out = build_views([0, 1], rows, {1: "timeout"})
    assert out == {
        "observers": [0, 1],
        "subjects": [0, 1],
        "views": {"0": {"0": "alive", "1": "suspect"}, "1": None},
        "errors": {"1": "timeout"},
        "leaders": {"0": 0, "1": None},
        "faults": {"0": None, "1": None},
        "agree": True,
    }
    leaderless = {0: {"views": {0: "alive"}, "leader": None, "faults": None}}
    assert build_views([0], leaderless, {})["agree"] is False


async def test_views_ask_peers_while_holding_a_forward_slot(
    app: QuartTrio, client: Any, runtime: Runtime
) -> None:
    admission = dashboard_state(app).admission
    held: list[int] = []

    def answer(node_id: int, request: JSON) -> Any:
        held.append(admission.statistics()["forwards_in_flight"])
        return row(AGREED)

    FakePeers(runtime, answer)
    status, _, _ = await call(client, "GET", "/api/cluster/views")
    assert (status, held) == (200, [1, 1])  # nodes 1 and 2, one slot for the whole request


def test_views_is_a_forward_for_admission() -> None:
    assert is_forward("/api/cluster/views", b"", 0)
    assert is_forward("/api/cluster/views/", b"", 0)
    assert not is_forward("/api/events", b"after=1", 0)
    assert not is_forward("/api/faults", b"", 0)
    assert is_forward("/api/nodes/1/events", b"", 0)


# -- routes and the page ----------------------------------------------------------------------


async def test_routes_list_the_new_endpoints(client: Any) -> None:
    _, body, _ = await call(client, "GET", "/api/routes")
    paths = {(r["method"], r["path"]) for r in body["routes"]}
    for path in ("/api/events", "/api/faults", "/api/cluster/views", "/views",
                 "/api/nodes/{node}/events", "/api/nodes/{node}/faults",
                 "/api/nodes/{node}/process"):  # fmt: skip
        assert ("GET", path) in paths, path


async def test_views_page_served_when_present(app: QuartTrio, client: Any, viz_root: Path) -> None:
    response = await client.get("/views")
    assert response.status_code == 404  # the test viz root has no views.html yet
    assert await response.get_json() == {"error": "no route or asset for /views"}
    (viz_root / "rt_admin" / "views.html").write_text("<!doctype html><title>Views</title>")
    response = await client.get("/views")
    assert response.status_code == 200
    assert response.headers["Content-Type"].startswith("text/html")
    assert "Views" in await response.get_data(as_text=True)


# -- on real node processes -------------------------------------------------------------------


def four_nodes(harness: Harness) -> tuple[list[Child], str]:
    """Nodes 0..3 of one hostfile, all alive in node 0's table; node 0's dashboard URL."""
    ports = [free_port() for _ in range(4)]
    hostfile = harness.workdir / "hosts"
    hostfile.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    nodes = [
        harness.start_node("--hostfile", str(hostfile), port=ports[i], name=f"n{i}")
        for i in (3, 2, 1, 0)
    ][::-1]
    url = harness.dashboard_url(nodes[0])
    wait_for(
        "4 members alive in node 0's table",
        lambda: [n["view"] for n in get(url, "/api/topology")["nodes"]],
        until=lambda views: views == ["alive"] * 4,
        timeout=60,
        retry_on=(*RETRY_ON, httpx.HTTPError),
    )
    return nodes, url


def get(url: str, path: str) -> Any:
    r = httpx.get(url + path, timeout=10)
    assert r.status_code == 200, (path, r.text)
    return r.json()


def down_event(events: list[JSON], subject: int) -> JSON | None:
    return next((e for e in events if e["subject"] == subject and e["new"] == "dead"), None)


def wait_down_event(url: str, path: str, subject: int, what: str) -> list[JSON]:
    """The events of ``url + path`` once they hold ``subject`` going dead (60 s at most);
    ``what`` names whose record is awaited, for the timeout's message."""
    return wait_for(
        what,
        lambda: get(url, path)["events"],
        until=lambda evs: down_event(evs, subject) is not None,
        timeout=60,
        retry_on=(*RETRY_ON, httpx.HTTPError),
    )


@pytest.mark.slow
def test_history_views_and_faults_on_real_nodes(harness: Harness) -> None:
    """Kill node 3: node 0's /api/events lists it going dead (seq increasing, the cursor pages
    through it) and node 1's, forwarded, too. Pause node 2: /api/cluster/views answers within
    the 6 s of the contract (1 s of slack for a loaded machine), node 2's row a timeout, killed
    node 3's row unreachable. A block set over the control RPC shows in /api/faults."""
    nodes, url = four_nodes(harness)
    harness.kill(nodes[3])
    events = wait_down_event(url, "/api/events?limit=5000", 3, "node 0 to record node 3 dead")
    seqs = [e["seq"] for e in events]
    assert seqs == list(range(1, len(seqs) + 1))
    dead = down_event(events, 3)
    assert dead is not None
    assert dead["observer"] == 0
    assert dead["old"] in ("alive", "probe_failed", "suspected")
    paged, cursor = [], 0
    while len(paged) < len(events):
        page = get(url, f"/api/events?after={cursor}&limit=3")
        assert page["dropped"] == 0
        paged += page["events"]
        cursor = page["next"]
    assert paged[: len(events)] == events
    peer = wait_down_event(
        url,
        "/api/nodes/1/events?limit=5000",
        3,
        "node 1 to record node 3 dead (read through node 0)",
    )
    assert {e["observer"] for e in peer} == {1}
    topology = {n["node_id"]: n for n in get(url, "/api/topology")["nodes"]}
    assert topology[3]["view"] == "dead"
    walls = {e["wall"] for e in get(url, "/api/events?limit=5000")["events"] if e["subject"] == 3}
    assert topology[3]["since"] in walls
    assert topology[3]["since"] >= dead["wall"]

    harness.pause(nodes[2])
    views = get(url, "/api/cluster/views")  # answered at all: the paused peer's 6 s deadline held
    assert views["errors"]["2"] == "timeout", views["errors"]
    assert views["errors"]["3"] == "unreachable"  # killed: asked all the same, refused at once
    assert views["views"]["2"] is None
    assert views["views"]["3"] is None
    assert views["views"]["0"]["3"] == "dead"
    assert views["views"]["1"]["3"] == "dead"
    assert views["leaders"]["0"] == views["leaders"]["1"] == 0

    reply = trio.run(rpc_call, HOST, nodes[0].port, Faults("block", peers=(2,)), 10.0)
    assert reply["ok"] is True
    faults = get(url, "/api/faults")
    assert faults == {
        "node_id": 0, "blocked": [2], "loss": {}, "delay": {}, "cut": [],
        "clock": {"offset": 0.0, "rate": 1.0}, "disk": {}, "active": True,
    }  # fmt: skip
