"""Mixed clusters: rtsim nodes speaking memberlist beside real Serf agents (``rt_cluster up
--serf M``), and the operations whose meaning differs from a cluster of nodes alone.

Rules:
1. Members are numbered 0..N+M-1, nodes first (``record`` rule 5), and every operation takes
   that number. ``kill``, ``pause`` and ``resume`` act on an agent's pid as on a node's (the
   launcher's own); ``stop`` sends an agent SIGINT, on which Serf leaves gracefully;
   ``agent_restart`` starts it again on the same ports, joining members that answer.
2. An agent is ready once its RPC port accepts a connection. Whom it sees is ``serf
   members`` (``serf.serf_members``), asked in a worker thread and bounded in time.
3. Converged means every expected member lists every expected member alive, by name: a node
   in its topology (``name``, ``state``), an agent in ``serf members`` (``status``). The
   wait is the launcher's (``convergence``); only the look differs.
4. A partition is cut on the rtsim side only: each node blocks, with its own fault injection,
   every member of the other groups (an agent by the node id the node's topology gives the
   agent's name), both directions of each such path. Serf has no such door, so a path
   between two agents cannot be cut: a partition that puts agents in different groups is
   refused. Every id is resolved before any node is told to block (validate, then mutate).
5. A one-way cut is the sending node's own fault injection: it may go from rtsim nodes to
   any member (an agent by the id the node gives it), never from an agent (Serf has no door
   to drop what it sends): refused. A clock or disk fault is a node's only: an agent's
   clock is the host's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import trio

from .convergence import ASK_AT_ONCE
from .faultrequests import check_cut
from .launcher import LocalCluster, NodeFailed
from .processes import log_tail
from .record import AgentRecord, BadInput, ClusterError, ClusterRecord, NodeRecord
from .serf import SerfUnavailable, member_name, serf_members

__all__ = ["MixedCluster", "alive_names", "open_local"]

MEMBERS_TIMEOUT = 2.0  # seconds an agent gets to say whom it sees, in a look


def alive_names(topology: Any) -> set[str] | None:
    """The names a node's topology body lists alive (None: no answer)."""
    if not isinstance(topology, Mapping) or not isinstance(topology.get("nodes"), list):
        return None
    return {
        str(m.get("name"))
        for m in topology["nodes"]
        if isinstance(m, Mapping) and m.get("state") == "alive"
    }


def open_local(record: ClusterRecord, *, viz: bool = True) -> LocalCluster:
    """The cluster of ``record``: a ``MixedCluster`` when it has Serf agents."""
    return MixedCluster(record, viz=viz) if record.agents else LocalCluster(record, viz=viz)


class MixedCluster(LocalCluster):
    """A cluster of rtsim nodes and Serf agents; member numbers name either (rule 1)."""

    noun = "members"  # in the convergence wait's messages

    # ---- agents starting (rule 2) ---------------------------------------------------------

    def _agent(self, index: int) -> AgentRecord:
        """The record of the agent numbered ``index``; BadInput when it is a node."""
        agent = self.record.member(index)
        if not isinstance(agent, AgentRecord):
            raise BadInput(f"member {index} is a node, not a Serf agent")
        return agent

    async def wait_agent_ready(self, index: int, timeout: float) -> AgentRecord:
        """Wait until the agent's RPC port answers; record it running. NodeFailed when it
        ends or stays silent for ``timeout`` seconds."""
        agent = self._agent(index)
        host, _, port = agent.rpc_addr.rpartition(":")
        deadline = trio.current_time() + timeout
        while True:
            if self.processes.state(agent) == "gone":
                raise await self._agent_failure(agent, "exited during start-up")
            with trio.move_on_after(1.0):
                try:
                    stream = await trio.open_tcp_stream(host, int(port))
                except OSError:
                    pass
                else:
                    await stream.aclose()
                    self._update_node(agent, state="running")
                    now = self.record.member(agent.index)
                    assert isinstance(now, AgentRecord)
                    return now
            if trio.current_time() >= deadline:
                raise await self._agent_failure(agent, f"did not open its RPC within {timeout:g}s")
            await trio.sleep(0.1)

    async def agent_failure(self, index: int, what: str) -> NodeFailed:
        """Record the agent as failed; the error naming it, how it ended, and its log."""
        return await self._agent_failure(self._agent(index), what)

    async def _agent_failure(self, agent: AgentRecord, what: str) -> NodeFailed:
        self._update_node(agent, state="failed")
        self.refresh_states()
        now = self.record.member(agent.index)
        ended = now.ended if now.pid == agent.pid else None
        how = f" ({ended.describe()})" if ended is not None else ""
        return NodeFailed(
            f"agent {agent.name} (pid {agent.pid}) {what}{how}; its log {agent.log}:\n"
            f"{log_tail(agent.log)}"
        )

    # ---- what each member sees (rule 3) ---------------------------------------------------

    async def seen_alive(self, number: int) -> set[str] | None:
        """The names member ``number`` lists alive now; None when it does not say."""
        rec = self.record.member(number)
        if isinstance(rec, NodeRecord):
            return alive_names(await self.topology(number))
        if self.processes.state(rec) != "running":
            return None
        ask = functools.partial(serf_members, rec.rpc_addr, MEMBERS_TIMEOUT)
        try:
            members = await trio.to_thread.run_sync(ask)
        except SerfUnavailable:
            return None
        return {name for name, status in members.items() if status == "alive"}

    async def views(self, ids: set[int]) -> dict[int, set[str] | None]:
        """What each member of ``ids`` lists alive, asked at most ``ASK_AT_ONCE`` at a time."""
        found: dict[int, set[str] | None] = {}
        limiter = trio.CapacityLimiter(ASK_AT_ONCE)

        async def one(i: int) -> None:
            async with limiter:
                found[i] = await self.seen_alive(i)

        async with trio.open_nursery() as nursery:
            for i in sorted(ids):
                nursery.start_soon(one, i)
        return found

    async def require_running(self, expect: set[int]) -> None:
        for i in sorted(expect):
            rec = self.record.member(i)
            if self.processes.state(rec) == "gone":
                what = "exited before the cluster converged"
                if isinstance(rec, AgentRecord):
                    raise await self._agent_failure(rec, what)
                raise await self._failure(rec, what)

    async def behind(self, expect: set[int], ask: set[int]) -> dict[int, Any]:
        names = {member_name(self.record.member(i)) for i in expect}
        return {i: v for i, v in (await self.views(ask)).items() if v != names}

    def example(self, expect: set[int], behind: dict[int, Any]) -> str:
        names = {member_name(self.record.member(i)) for i in expect}
        return f"; {_example(self.record, behind, names)}" if behind else ""

    # ---- operations whose meaning differs for an agent (rule 1) ---------------------------

    async def stop(self, node_id: int, grace: float = 10.0) -> None:
        if isinstance(self.record.member(node_id), AgentRecord):
            await self.stop_agent(node_id, grace)
        else:
            await super().stop(node_id, grace)

    async def agent_restart(
        self, index: int, *, hard: bool = False, timeout: float = 30.0
    ) -> AgentRecord:
        """Stop (or SIGKILL) the agent if it runs, start it again on the same ports."""
        agent = self._agent(index)
        if self.processes.state(agent) != "gone":
            if hard:
                await self.terminate([index], hard=True)
                self._update_node(agent, state="killed")
            else:
                await self.stop_agent(index)
        self.spawn_agent(index)
        return await self.wait_agent_ready(index, timeout)

    # ---- partitions (rule 4) --------------------------------------------------------------

    async def agent_id_at(self, node_id: int, index: int) -> int:
        """The node id node ``node_id`` gives agent ``index`` in its topology (what its fault
        injection names it by); ClusterError when it lists none."""
        agent = self._agent(index)
        body = await self.topology(node_id)
        listed = body.get("nodes") if body is not None else None
        for m in listed if isinstance(listed, list) else ():
            if isinstance(m, Mapping) and m.get("name") == agent.name:
                given = m.get("node_id")
                if isinstance(given, int) and not isinstance(given, bool):
                    return given
        said = "did not answer" if body is None else f"lists no node id for {agent.name}"
        raise ClusterError(
            f"node {node_id} {said}, so its fault injection (which blocks members by "
            f"id) cannot cut agent {agent.name}; nothing was changed"
        )

    async def partition(self, groups: Sequence[Sequence[int]]) -> list[str]:
        """Each node blocks every member of the other groups (rule 4); notes about skipped
        nodes. BadInput when agents are in more than one group."""
        homes = {g: [self.record.member(i) for i in grp] for g, grp in enumerate(groups)}
        with_agents = [g for g, ms in homes.items() if any(isinstance(m, AgentRecord) for m in ms)]
        if len(with_agents) > 1:
            names = [m.name for g in with_agents for m in homes[g] if isinstance(m, AgentRecord)]
            raise BadInput(
                f"agents {', '.join(names)} are in different groups: only rtsim nodes can "
                "drop packets, so the path between two Serf agents cannot be cut; put every "
                "agent in one group"
            )
        notes, blocks = [], []
        for g, members in homes.items():
            away = [m for h, ms in homes.items() if h != g for m in ms]
            for rec in members:
                if isinstance(rec, AgentRecord):
                    continue
                if self.processes.state(rec) == "gone":
                    notes.append(f"node {rec.node_id} is not running; skipped")
                    continue
                ids = [
                    await self.agent_id_at(rec.node_id, m.index)
                    if isinstance(m, AgentRecord)
                    else m.node_id
                    for m in away
                ]
                blocks.append((rec.node_id, ids))
        for node_id, ids in blocks:
            await self.faults(node_id, "block", peers=ids)
        return notes

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> list[str]:
        """Rule 5: each rtsim node of ``src`` cuts every member of ``dst``."""
        check_cut(self.record, src, dst)
        agents = [m.name for m in map(self.record.member, src) if isinstance(m, AgentRecord)]
        if agents:
            raise BadInput(
                f"{', '.join(agents)} cannot cut: only rtsim nodes can drop what they send, "
                "a Serf agent has no such door (cut from nodes to it instead)"
            )
        notes, cuts = [], []
        for i in src:
            if self.processes.state(self.record.node(i)) == "gone":
                notes.append(f"node {i} is not running; skipped")
                continue
            away = [self.record.member(j) for j in dst]
            ids = [
                await self.agent_id_at(i, m.index) if isinstance(m, AgentRecord) else m.node_id
                for m in away
            ]
            cuts.append((i, ids))
        for node_id, ids in cuts:
            await self.faults(node_id, "cut", peers=ids)
        return notes


def _example(record: ClusterRecord, behind: Mapping[int, set[str] | None], want: set[str]) -> str:
    """What the first member that has not converged lists, for a timeout's message."""
    i = min(behind)
    who = member_name(record.member(i))
    seen = behind[i]
    if seen is None:
        return f"e.g. {who} does not answer"
    missing = ", ".join(sorted(want - seen)) or "none"
    extra = ", ".join(sorted(seen - want))
    return f"e.g. {who} lacks {missing}" + (f" and lists {extra} too" if extra else "")
