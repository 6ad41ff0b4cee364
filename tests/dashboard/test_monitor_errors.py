"""A monitor query a pool does not know is an error, never an all-null success: 400 when asked
here, and in a broadcast each failed node's reason in ``errors`` beside its null result."""

from __future__ import annotations

from typing import Any

from cluster.ground.errors import BadRequest
from cluster.runtime.testing import FakePeers

from .conftest import call

URL = "/api/pools/1.0/monitor"


def refuse_queries(node_id: int, request: dict[str, Any]) -> Any:
    """A peer whose pool knows only ``stats`` (as the real containers answer)."""
    if request["query"] != "stats":
        raise BadRequest(f"pool 1.0 (rt_admin) has no query '{request['query']}'")
    return {"pool_name": "rt_admin", "node": node_id}


async def test_an_unknown_query_asked_here_is_a_400(client: Any) -> None:
    status, body, _ = await call(client, "GET", f"{URL}?query=no_such_query")
    assert status == 400
    assert "no_such_query" in body["error"]


async def test_an_unknown_query_nobody_knows_in_a_broadcast_is_a_400(
    client: Any, peers: FakePeers
) -> None:
    peers.answer = refuse_queries
    status, body, _ = await call(client, "GET", f"{URL}?query=no_such_query&routing=broadcast")
    assert status == 400
    assert "no_such_query" in body["error"]


async def test_a_broadcast_names_each_node_that_failed(client: Any, peers: FakePeers) -> None:
    peers.answer = refuse_queries
    peers.refuse(1)  # node 1 cannot be reached; node 0 (here) answers
    status, body, _ = await call(client, "GET", f"{URL}?query=stats&routing=broadcast")
    assert status == 200
    assert body["results"]["0"]["pool_name"] == "rt_admin"
    assert body["results"]["1"] is None
    assert list(body["errors"]) == ["1"]
    assert "refused" in body["errors"]["1"]


async def test_a_query_only_some_nodes_refuse_is_answered_with_their_errors(
    client: Any, peers: FakePeers
) -> None:
    def node1_refuses(node_id: int, request: dict[str, Any]) -> Any:
        raise BadRequest("pool 1.0 (rt_admin) has no query 'stats' on this old node")

    peers.answer = node1_refuses
    status, body, _ = await call(client, "GET", f"{URL}?query=stats&routing=broadcast")
    assert status == 200
    assert body["results"]["1"] is None
    assert body["errors"] == {"1": "pool 1.0 (rt_admin) has no query 'stats' on this old node"}


async def test_a_clean_broadcast_has_no_errors_key(client: Any, peers: FakePeers) -> None:
    peers.answer = refuse_queries
    status, body, _ = await call(client, "GET", f"{URL}?query=stats&routing=broadcast")
    assert status == 200
    assert list(body) == ["pool_id", "query", "results"]
    assert all(v is not None for v in body["results"].values())
