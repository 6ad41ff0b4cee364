"""``rt_cluster status``: one look at every member of a cluster, as a table or as JSON.

Rules:
1. Process states come from the record and /proc; what each running node sees and which faults
   it has, from one look (``watch.look``). Nothing here changes a cluster.
2. A cluster of rtsim nodes alone keeps its table and its JSON shape exactly. A cluster with
   Serf agents (``up --serf``) shows one row per member, nodes and agents, with its ``kind``
   (``rtsim`` or ``serf``) and name; its JSON adds ``agents`` (each with ``name`` and
   ``rpc_addr``) and, per node and agent, ``sees_alive``: the names the member lists alive
   (a node in its topology, an agent in ``serf members``; null when it did not say).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence
from typing import Any

from cluster.local import (
    AgentRecord,
    ClusterRecord,
    LocalCluster,
    MixedCluster,
    NodeRecord,
    cut_nodes,
    member_name,
)

from .clusters import live_state, open_cluster, stray_members
from .output import out, real_and_simulated, status_lines, table
from .watch import Look, look

__all__ = ["cmd_status"]

Views = Mapping[int, set[str] | None]  # member number -> names it lists alive (None: silent)
NODE_HEADER = ("node", "pid", "state", "ended", "host", "runtime", "sees alive", "faults")
MIXED_HEADER = ("member", "kind", "name", "pid", "state", "ended", "host", "gossip")


async def cmd_status(args: argparse.Namespace) -> int:
    cluster = open_cluster(args.name)
    rec = cluster.record
    strays = stray_members(cluster)
    seen = await look(cluster)
    cuts = cut_nodes(rec)
    views = await _views(cluster, seen)
    if args.json:
        body = _body(rec, seen, cuts, views)
        body["strays"] = [{"pid": m.pid, "node_id": m.node_id} for m in strays]
        body["network"] = None if rec.network is None else rec.network.to_status()
        out(json.dumps(body, indent=2))
        return 0
    out(f"cluster {rec.name!r} ({rec.directory})")
    if rec.agents:
        out(table(_mixed_rows(rec, seen, cuts, views), (*MIXED_HEADER, *NODE_HEADER[6:], "door")))
    else:
        out(table(_node_rows(rec, seen, cuts), (*NODE_HEADER, "dashboard")))
    for line in status_lines(rec, strays):
        out(line)
    return 0


async def _views(cluster: LocalCluster, seen: Look) -> Views:
    """What every member of a cluster with agents lists alive, by name (a node's from the
    look, an agent asked now); {} in a cluster without agents."""
    if not isinstance(cluster, MixedCluster):
        return {}
    views: dict[int, set[str] | None] = {}
    for n in cluster.record.nodes:
        node = seen.get(n.node_id)
        views[n.node_id] = None if node is None else node.alive_names()
    for a in cluster.record.agents:
        views[a.index] = await cluster.seen_alive(a.index)
    return views


def _ended(rec: NodeRecord | AgentRecord, state: str) -> str:
    over = rec.ended is not None and state not in ("running", "paused")
    return rec.ended.describe() if over and rec.ended is not None else "-"


def _body(rec: ClusterRecord, seen: Look, cuts: Mapping[int, Any], views: Views) -> dict[str, Any]:
    """``{"name", "nodes"}``, and ``agents`` in a cluster with Serf agents (rule 2)."""
    nodes = []
    for n in rec.nodes:
        node = {
            **n.to_status(live_state(n)),
            "host": rec.host_of(n),
            "faults": getattr(seen.get(n.node_id), "faults", None),
            "cut_from": cuts.get(n.node_id),
        }
        if rec.agents:
            node.update(kind="rtsim", name=member_name(n), sees_alive=_sorted(views, n.node_id))
        nodes.append(node)
    body: dict[str, Any] = {"name": rec.name, "nodes": nodes}
    if rec.agents:
        body["agents"] = [
            {**a.to_status(live_state(a)), "sees_alive": _sorted(views, a.index)}
            for a in rec.agents
        ]
    return body


def _sorted(views: Views, number: int) -> list[str] | None:
    names = views.get(number)
    return None if names is None else sorted(names)


def _node_rows(rec: ClusterRecord, seen: Look, cuts: Mapping[int, Any]) -> list[Sequence[Any]]:
    rows: list[Sequence[Any]] = []
    for n in rec.nodes:
        node = seen.get(n.node_id)
        alive = node.alive_count() if node is not None else None
        state = live_state(n)
        faults = "-" if node is None else node.faults_cell()
        if rec.network is not None:
            faults = real_and_simulated(cuts.get(n.node_id), faults)
        rows.append(
            (
                n.node_id,
                n.pid,
                state,
                _ended(n, state),
                rec.host_of(n),
                n.runtime_port,
                "-" if alive is None else alive,
                faults,
                n.dashboard or "-",
            )
        )
    return rows


def _mixed_rows(
    rec: ClusterRecord, seen: Look, cuts: Mapping[int, Any], views: Views
) -> list[Sequence[Any]]:
    """One row per member, nodes then agents; an agent's door is its RPC address."""
    rows: list[Sequence[Any]] = []
    for n, row in zip(rec.nodes, _node_rows(rec, seen, cuts), strict=True):
        names = views.get(n.node_id)
        alive = "-" if names is None else len(names)
        rows.append((n.node_id, "rtsim", member_name(n), *row[1:6], alive, *row[7:]))
    for a in rec.agents:
        state = live_state(a)
        names = views.get(a.index)
        alive = "-" if names is None else len(names)
        rows.append(
            (
                a.index,
                "serf",
                a.name,
                a.pid,
                state,
                _ended(a, state),
                a.host,
                a.gossip_port,
                alive,
                "-",
                f"rpc {a.rpc_addr}",
            )
        )
    return sorted(rows, key=lambda row: int(row[0]))
