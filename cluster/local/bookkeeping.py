"""The processes of one local cluster, rtsim nodes and Serf agents, tracked so that none can be
lost: every start recorded at once, every process found again, every end explained.

Rules:
1. Every node process is forked by a ``cluster.node.zygote``, under a watcher that records it
   in ``<dir>/procs/`` before it runs and records how it ended (``ledger``). The launcher
   then records the pid in ``cluster.json`` as soon as the fork returns.
2. Every change to the record is written through at once (``update_record``: locked,
   re-read, atomic) and guarded by the process it is about: a change about a node's process
   never lands on a newer process of that node that someone else started meanwhile.
3. Ending the cluster (``down``) ends every process it knows of, from the record and from the
   process files, each checked by pid and start marker; never by name.
4. Nothing here talks to a node: RPC and the operations on top are ``launcher``'s.
5. A Serf agent (``serf``) is spawned here, detached in a session of its own, its output to
   its log, and its pid recorded in ``cluster.json`` as soon as the spawn returns (it has no
   watcher: a ``kill -9`` of the launcher in between loses it). From then on it is found,
   signalled and ended as a node is, by pid and start marker.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from .ledger import Member, fold_endings, forget, live_members, members, procs_dir
from .network import NodeNetwork, network_of
from .plan import node_command
from .processes import Proc, Processes, Zygote, child_env
from .record import (
    AgentRecord,
    BadInput,
    ClusterRecord,
    NodeRecord,
    merge_agent,
    merge_node,
    process_state,
    read_record,
    update_record,
)
from .serf import agent_command, join_addresses, serf_binary

__all__ = ["TrackedCluster"]

RECORD_WAIT = 5.0  # seconds a watcher gets to record how its node ended
AnyMember = NodeRecord | AgentRecord


class TrackedCluster:
    """The processes of one cluster record: started, found, signalled and ended."""

    def __init__(
        self, record: ClusterRecord, *, python: str | None = None, viz: bool = True
    ) -> None:
        self.record = record
        self.network: NodeNetwork = network_of(record)  # chosen once (``network`` rule 1)
        self.python = python or sys.executable
        self.viz = viz
        self.processes = Processes()
        self._unsaved: list[NodeRecord] = []  # forked, not yet in the file (``save_forks``)

    @property
    def directory(self) -> Path:
        return Path(self.record.directory)

    # ---- the record (rule 2) -------------------------------------------------------------

    def reload(self) -> ClusterRecord:
        """The record as it is on disk now (others may have changed it)."""
        self.record = read_record(self.directory) or self.record
        return self.record

    def create(self) -> None:
        """Write the record of a new cluster whole, replacing an earlier run's (whose processes
        ``plan_cluster`` found all ended)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.record = update_record(self.directory, lambda _: self.record)

    def _commit(self, change: Callable[[ClusterRecord], ClusterRecord]) -> None:
        self.record = update_record(self.directory, lambda disk: change(disk or self.record))

    def _update_node(self, seen: AnyMember, **changes: Any) -> None:
        """Change the member's record if it still names the process ``seen`` names."""

        def change(rec: ClusterRecord) -> ClusterRecord:
            if isinstance(seen, AgentRecord):
                for a in rec.agents:
                    if a.index == seen.index and (a.pid, a.started) == (seen.pid, seen.started):
                        return rec.with_agent(replace(a, **changes))
                return rec
            for n in rec.nodes:
                if n.node_id == seen.node_id and (n.pid, n.started) == (seen.pid, seen.started):
                    return rec.with_node(replace(n, **changes))
            return rec

        self._commit(change)

    def set_state(self, node_id: int, state: str) -> None:
        self._update_node(self.record.member(node_id), state=state)

    def refresh_states(self, gone_state: str = "exited") -> None:
        """Re-read the record and match it to the processes: a node that died becomes
        ``gone_state`` and gets its ending; ended processes' files are folded in."""
        done: list[Member] = []

        def change(rec: ClusterRecord) -> ClusterRecord:
            folded, ended = fold_endings(rec, members(self.directory, rec), gone_state=gone_state)
            done.extend(ended)
            return folded

        self._commit(change)
        forget(done)

    async def wait_recorded(self, timeout: float = RECORD_WAIT) -> None:
        """Wait (at most ``timeout`` s) until every ended process's watcher recorded its end
        and exited: one that recorded it may still hold the cluster's directory a moment."""
        watchers = [
            Proc(m.watcher, m.watcher_started, m.log)
            for m in members(self.directory, self.record)
            if m.watcher and process_state(m.pid, m.started) == "gone"
        ]
        await self.processes.wait_gone(watchers, timeout)

    # ---- starting (rule 1) ---------------------------------------------------------------

    def node_command(self, node_id: int) -> list[str]:
        joins = self.join_addresses(node_id) if self.record.wire else ()
        rec = self.record.node(node_id)
        return node_command(
            self.record, rec, python=self.python, viz=self.viz, joins=joins, network=self.network
        )

    def join_addresses(self, number: int) -> list[str]:
        """Where a starting member of a mixed cluster joins: members that answer already."""
        rec = self.record.member(number)
        return join_addresses(self.record, rec, lambda m: self.processes.state(m) != "gone")

    @contextlib.contextmanager
    def open_zygote(self) -> Iterator[Zygote]:
        """A zygote for the ``with`` block; on leaving, every fork it made is recorded."""
        procs_dir(self.directory).mkdir(parents=True, exist_ok=True)
        argv = [self.python, "-m", "cluster.node.zygote"]
        errors = self.directory / "zygote.log"
        with self.processes.open_zygote(argv, child_env(), errors) as zygote:
            yield zygote

    def fork(self, zygote: Zygote, node_id: int, *, save: bool = True) -> NodeRecord:
        """Start the process of node ``node_id`` from ``zygote``; its pid is in the record
        file before this returns, or with ``save=False`` at the next ``save_forks`` (it is in
        ``record`` at once, and its watcher records it in ``procs/`` before it runs either
        way)."""
        self.send_fork(zygote, node_id)
        return self.take_fork(zygote, node_id, save=save)

    def send_fork(self, zygote: Zygote, node_id: int) -> None:
        """``fork``'s first half: ask ``zygote`` for the node's process, without waiting."""
        rec = self.record.node(node_id)
        with open(rec.log, "ab") as out:
            out.write(f"--- rt_cluster: starting node {rec.node_id} at {time.ctime()}\n".encode())
        argv = self.node_command(node_id)[3:]  # after "python -m cluster.node.cli"
        tag = {"cluster": self.record.name, "node_id": rec.node_id}
        zygote.send(argv, rec.log, procs_dir(self.directory), tag)

    def take_fork(self, zygote: Zygote, node_id: int, *, save: bool = True) -> NodeRecord:
        """``fork``'s second half, for the oldest ``send_fork`` to ``zygote`` (``node_id``)."""
        rec = self.record.node(node_id)
        proc = zygote.receive(rec.log)
        new = replace(rec, pid=proc.pid, started=proc.started, state="starting", ended=None)
        if save:
            self._commit(lambda r: merge_node(r, new))
        else:
            self._unsaved.append(new)
            self.record = merge_node(self.record, new)
        return new

    def save_forks(self) -> None:
        """Write the forks made with ``save=False`` into the record file, in one update."""
        if not self._unsaved:
            return
        forked, self._unsaved = self._unsaved, []

        def change(rec: ClusterRecord) -> ClusterRecord:
            for new in forked:
                rec = merge_node(rec, new)
            return rec

        self._commit(change)

    def spawn(self, node_id: int) -> NodeRecord:
        """Start the process of one node, from a zygote of its own (where its network runs
        it: in its namespace, if it has one)."""
        return self.network.spawn(self, node_id)

    def spawn_agent(self, index: int) -> AgentRecord:
        """Start the process of the Serf agent numbered ``index``, joining through the
        members that answer; its pid is recorded before this returns (rule 5)."""
        agent = self.record.member(index)
        if not isinstance(agent, AgentRecord):
            raise BadInput(f"member {index} is a node, not a Serf agent")
        argv = agent_command(self.record, agent, self.join_addresses(index), serf=serf_binary())
        with open(agent.log, "ab") as out:
            out.write(f"--- rt_cluster: starting {agent.name} at {time.ctime()}\n".encode())
        proc = self.processes.spawn(argv, agent.log, dict(os.environ))
        try:
            pgid = os.getpgid(proc.pid)
        except ProcessLookupError:  # ended at once: its log says why
            pgid = 0
        new = replace(
            agent, pid=proc.pid, pgid=pgid, started=proc.started, state="starting", ended=None
        )
        self._commit(lambda r: merge_agent(r, new))
        return new

    # ---- watching and ending (rule 3) ----------------------------------------------------

    def state_of(self, number: int) -> str:
        """The process state of member ``number`` now: ``running``, ``paused`` or ``gone``."""
        return self.processes.state(self.record.member(number))

    def signal(self, number: int, sig: signal.Signals) -> bool:
        """Send ``sig`` to the member's process group; False if the process is gone."""
        return self.processes.signal(self.record.member(number), sig)

    async def wait_gone(self, numbers: Sequence[int], timeout: float) -> list[int]:
        """Wait until every member's process is gone or ``timeout`` s pass; the survivors."""
        recs = [self.record.member(i) for i in numbers]
        survivors = await self.processes.wait_gone(recs, timeout)
        return [_number(r) for r in survivors]

    async def terminate(
        self, numbers: Sequence[int], *, grace: float = 10.0, hard: bool = False
    ) -> None:
        """End the members' processes (SIGTERM, then SIGKILL after ``grace`` s); verify they
        are gone."""
        recs = [self.record.member(i) for i in numbers]
        await self.processes.terminate(recs, grace=grace, hard=hard, name=_node_and_pid)

    def live_nodes(self) -> list[NodeRecord]:
        return [r for r in self.record.nodes if self.processes.state(r) != "gone"]

    def running(self) -> list[Member]:
        """Every process of the cluster that still runs: recorded nodes, and processes only
        their watchers recorded (a start whose launcher died, an older process of a node)."""
        return live_members(self.directory, self.reload())

    async def down(self, grace: float = 10.0) -> list[Member]:
        """End every process of the cluster (verified; ClusterError naming survivors); the
        processes that were running. Their nodes become ``stopped``."""
        running = self.running()
        try:
            await self.processes.terminate(running, grace=grace, name=Member.label)
        finally:
            await self.wait_recorded()
            self.refresh_states(gone_state="stopped")
        return running

    async def stop_agent(self, index: int, grace: float = 10.0) -> None:
        """Stop a Serf agent gracefully: SIGINT (it leaves the cluster), SIGTERM and SIGKILL
        after ``grace`` seconds."""
        rec = self.record.member(index)
        self.require_live(index)
        self.signal(index, signal.SIGCONT)  # a paused agent cannot act on SIGINT
        self.signal(index, signal.SIGINT)
        if await self.wait_gone([index], grace):
            await self.terminate([index], grace=0)
        self._update_node(rec, state="stopped")

    def require_live(self, number: int) -> None:
        """BadInput when member ``number``'s process is gone."""
        rec = self.record.member(number)
        if self.processes.state(rec) == "gone":
            raise BadInput(
                f"{_who(rec)} is not running (state {rec.state}); "
                f"start it with: rt_cluster restart {number} --name {self.record.name}"
            )


def _who(rec: AnyMember) -> str:
    """``node 2``, or ``agent serf-3`` for a Serf agent."""
    return f"agent {rec.name}" if isinstance(rec, AgentRecord) else f"node {rec.node_id}"


def _number(rec: AnyMember) -> int:
    return rec.index if isinstance(rec, AgentRecord) else rec.node_id


def _node_and_pid(rec: AnyMember) -> str:
    return f"{_who(rec)} pid {rec.pid}"
