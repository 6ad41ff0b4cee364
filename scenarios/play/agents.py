"""Serf agents in a chaos test's cluster (``open_cluster(n, "real", serf=M)``): members are
numbered, the nodes first, and each agent's view is read through ``serf members``.

Rules:
1. A member's number is read from its name: ``rt-<i>`` for node ``i``, ``serf-<i>`` for the
   agent numbered ``i`` (``cluster.local.serf``). A name no member of the record has is
   left out of a view.
2. An agent's view is ``serf members -format=json`` through its RPC address, in a worker
   thread, bounded in time: ``alive`` and ``leaving`` read as alive, ``failed`` as dead,
   ``left`` as left. An agent that does not answer has no view (None), as a silent node.
3. A node's events name an agent by the id the node gave its name
   (``swim.memberlist.edge.name_id``); they are told in member numbers here, so a trace names
   every member one way. An agent has no events of its own.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from cluster.local import AgentRecord, ClusterRecord, SerfUnavailable, member_name, serf_members
from swim.memberlist.edge import name_id

__all__ = ["agent_view", "member_numbers", "node_view", "renumber_events"]

ASK_TIMEOUT = 2.0  # seconds an agent gets to say whom it sees
_STATUS = {"alive": "alive", "leaving": "alive", "failed": "dead", "left": "left"}


def member_numbers(record: ClusterRecord) -> dict[str, int]:
    """Rule 1: every member's name to its number."""
    numbers = {member_name(n): n.node_id for n in record.nodes}
    return numbers | {a.name: a.index for a in record.agents}


def node_view(topology: Mapping[str, Any], numbers: Mapping[str, int]) -> dict[int, str]:
    """A node's view (its topology's rows, by name) in member numbers."""
    rows = topology.get("nodes")
    view: dict[int, str] = {}
    for m in rows if isinstance(rows, list) else ():
        if isinstance(m, Mapping) and "view" in m and str(m.get("name")) in numbers:
            view[numbers[str(m["name"])]] = str(m["view"])
    return view


async def agent_view(agent: AgentRecord, numbers: Mapping[str, int]) -> dict[int, str] | None:
    """Rule 2: what ``agent`` sees, in member numbers; None when it does not answer."""
    ask = functools.partial(serf_members, agent.rpc_addr, ASK_TIMEOUT)
    try:
        members = await trio.to_thread.run_sync(ask)
    except SerfUnavailable:
        return None
    return {
        numbers[name]: _STATUS.get(status, status)
        for name, status in members.items()
        if name in numbers
    }


def renumber_events(
    events: Sequence[dict[str, Any]], agents: Sequence[AgentRecord]
) -> list[dict[str, Any]]:
    """Rule 3: the nodes' events with each agent's id replaced by its member number."""
    ids = {name_id(a.name): a.index for a in agents}
    return [e | {"subject": ids[e["subject"]]} if e.get("subject") in ids else e for e in events]
