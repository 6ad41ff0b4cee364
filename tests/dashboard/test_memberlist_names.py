"""A node speaking memberlist names its members in the API (``shapes.topology``,
``views.cluster_views``): each row gets ``name``, ``tags``, ``rtsim``, ``ip``, ``port`` and
memberlist's state; a Serf agent is never asked for a view, it is ``not an rtsim node``; a
node speaking rtsim's own protocol answers as before (no names)."""

from __future__ import annotations

from typing import Any

from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers

from .conftest import call
from .test_history_api import row, rows_answer

NAMES = {
    0: {"name": "rt-0", "tags": {"rtsim": "0"}, "rtsim": True},
    1: {"name": "rt-1", "tags": {"rtsim": "1"}, "rtsim": True},
    2: {"name": "serf-a", "tags": {"role": "web"}, "rtsim": False},
}


def name_them(runtime: Runtime) -> FakeMembership:
    table = runtime.membership
    assert isinstance(table, FakeMembership)
    table.described.update(NAMES)
    return table


async def test_topology_names_every_member_in_memberlist_mode(
    client: Any, runtime: Runtime
) -> None:
    table = name_them(runtime)
    table.change(1, "suspected")
    status, body, _ = await call(client, "GET", "/api/topology")
    assert status == 200
    rows = {n["name"]: n for n in body["nodes"]}
    assert set(rows) == {"rt-0", "rt-1", "serf-a"}
    agent = rows["serf-a"]
    assert (agent["rtsim"], agent["tags"], agent["ip"], agent["port"]) == (
        False, {"role": "web"}, agent["ip_address"], 9415,
    )  # fmt: skip
    assert (rows["rt-1"]["state"], agent["state"]) == ("suspect", "dead")  # memberlist's words


async def test_topology_without_names_is_unchanged(client: Any, runtime: Runtime) -> None:
    _, body, _ = await call(client, "GET", "/api/topology")
    assert all("name" not in n and n["state"] in ("alive", "dead") for n in body["nodes"])


async def test_views_never_ask_a_serf_agent(client: Any, runtime: Runtime) -> None:
    name_them(runtime)
    peers = FakePeers(runtime, rows_answer({1: row({"0": "alive", "1": "alive", "2": "dead"})}))
    status, body, _ = await call(client, "GET", "/api/cluster/views")
    assert status == 200
    assert body["errors"] == {"2": "not an rtsim node"}
    assert body["names"] == {"0": "rt-0", "1": "rt-1", "2": "serf-a"}
    assert [n for n, _ in peers.calls] == [1]  # node 2, the agent, was not asked
