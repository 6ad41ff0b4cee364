"""The node's own answers, shaped as JSON: health, topology, pools, modules and settings.

Rules:
1. Each is a pure function of a ``NodeState``: it reads, never changes, and asks no peer.
2. The shapes are the API's (``cluster.api.answers`` holds their schemas; the tests validate
   every live answer against them).
"""

from __future__ import annotations

from typing import Any

from .configview import config_answer
from .membership import SingleNode, state_name, view_name
from .nodestate import NodeState

__all__ = ["chimods", "config_json", "health", "pools_json", "topology"]

JSON = dict[str, Any]


def health(node: NodeState) -> JSON:
    return {
        "ok": True,
        "node_id": node.node_id,
        "hostname": node.hostname,
        "ip_address": node.ip_address,
        "is_leader": node.is_leader,
    }


def topology(node: NodeState) -> JSON:
    """The host table as this node holds it; per member its ``incarnation``, ``since`` (wall
    epoch s of the last change seen here, or None) and ``view``. A node speaking memberlist
    adds each member's ``name``, ``tags``, ``rtsim``, ``ip`` and ``port``, and gives ``state``
    as memberlist says it (``alive``, ``suspect``, ``dead``, ``left``)."""
    ms = node.membership
    leader = ms.leader_id()
    nodes = []
    for m in sorted(ms.members(), key=lambda m: m.node_id):
        state = state_name(m.state)
        row = {
            "node_id": m.node_id,
            "ip_address": m.host,
            "state": state,
            "alive": state == "alive",
            "is_leader": m.node_id == leader,
            "is_self": m.node_id == node.node_id,
            "incarnation": m.incarnation,
            "since": ms.since(m.node_id),
            "view": view_name(m.state),
        }
        about = ms.describe(m.node_id)
        if about is not None:  # memberlist: names, and the state as memberlist says it
            row.update(about, ip=m.host, port=m.port, state=row["view"])
        nodes.append(row)
    return {
        "self_node_id": node.node_id,
        "leader_node_id": leader,
        "hostname": node.hostname,
        "nodes": nodes,
    }


def pools_json(node: NodeState) -> JSON:
    return {"pools": [c.info.to_json() for c in node.pools.all()]}


def config_json(node: NodeState) -> JSON:
    """The settings the node came up with, and where each came from (``config_answer``)."""
    return config_answer(
        node.settings,
        node.viz_address,
        swim_enabled=not isinstance(node.membership, SingleNode),
        modules=list(node.modules),
    )


def chimods(node: NodeState) -> JSON:
    return {
        "chimods": [
            {"name": name, "has_create": mod.has_create_form, "has_pages": name in node.assets}
            for name, mod in node.modules.items()
        ]
    }
