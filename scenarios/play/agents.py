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
4. While a scenario runs, ``AgentLooks`` looks at every running agent's view every
   ``LOOK_INTERVAL`` seconds (``LOOK_PER_AGENT`` per agent when that is longer: one ``serf
   members`` each, bounded in count) and keeps each change as an event in the event-log shape
   (observer the agent, cause ``serf members``), stamped when the answer arrived: the change
   happened at most one look before, so a latency measured from it is never shorter than the
   real one. The first look is taken before the start, so every agent's view is known there;
   an agent that does not answer (paused, killed) adds nothing; after a restart its view is
   looked at as new (the trace forgets an observer's view at its restart).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import trio

from cluster.local import AgentRecord, ClusterRecord, SerfUnavailable, member_name, serf_members
from swim.memberlist.edge import name_id

__all__ = ["AgentLooks", "agent_view", "member_numbers", "node_view", "renumber_events"]

ASK_TIMEOUT = 2.0  # seconds an agent gets to say whom it sees
LOOK_INTERVAL = 0.25  # seconds between two looks at every agent's view while a scenario runs
LOOK_PER_AGENT = 0.02  # seconds: many agents are looked at less often (64: every 1.28 s)
LOOK_CAUSE = "serf members"  # the cause of an event an agent's look found
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


class AgentLooks:
    """Rule 4: the changes of every agent's view, looked at while a scenario runs."""

    def __init__(self, members: Sequence[AgentRecord], numbers: Mapping[str, int]) -> None:
        self.members = {a.index: a for a in members}
        self.numbers = numbers
        self.found: list[dict[str, Any]] = []  # event-log shape, in the order found
        self.looks = dict.fromkeys(self.members, 0)  # answered looks, per agent
        self.silent = dict.fromkeys(self.members, 0)  # looks it did not answer
        self._last: dict[int, dict[int, str]] = {}

    def forget(self, index: int) -> None:
        """The agent restarted: its next view is new, every member in it a change."""
        self._last.pop(index, None)

    def take(self, index: int, view: Mapping[int, str] | None, mono: float) -> None:
        """One answer of agent ``index`` (None: no answer), its changes kept as events."""
        if view is None:
            self.silent[index] = self.silent.get(index, 0) + 1
            return
        self.looks[index] = self.looks.get(index, 0) + 1
        before = self._last.get(index, {})
        wall = time.time()
        for subject, state in sorted(view.items()):
            old = before.get(subject)
            if old != state:
                self.found.append(
                    {
                        "mono": mono,
                        "wall": wall,
                        "observer": index,
                        "subject": subject,
                        "old": old,
                        "new": state,
                        "incarnation": 0,
                        "cause": LOOK_CAUSE,
                    }
                )
        self._last[index] = {**before, **view}

    async def look(self, running: Callable[[int], bool]) -> None:
        """One look at every running agent, all at once."""

        async def one(index: int) -> None:
            view = await agent_view(self.members[index], self.numbers)
            self.take(index, view, time.monotonic())

        async with trio.open_nursery() as nursery:
            for index in sorted(self.members):
                if running(index):
                    nursery.start_soon(one, index)

    async def serve(self, running: Callable[[int], bool]) -> None:
        """Look again every ``LOOK_INTERVAL`` seconds (rule 4) until cancelled."""
        interval = max(LOOK_INTERVAL, LOOK_PER_AGENT * len(self.members))
        while True:
            await trio.sleep(interval)
            await self.look(running)

    def summary(self) -> list[dict[str, Any]]:
        """Per agent: its number, its name, the looks answered and not, its last view."""
        return [
            {
                "member": i,
                "name": a.name,
                "looks": self.looks.get(i, 0),
                "unanswered": self.silent.get(i, 0),
                "view": {str(s): st for s, st in sorted(self._last.get(i, {}).items())},
            }
            for i, a in sorted(self.members.items())
        ]
