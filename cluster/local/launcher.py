"""Local clusters: the operations ``rt_cluster`` offers on the node processes of one cluster
record (``startup.launch`` starts a whole cluster).

Rules:
1. Each node runs ``rt_run start ...`` (``plan.node_command``), forked from a pre-imported
   ``cluster.node.zygote`` and tracked by ``bookkeeping.TrackedCluster``: recorded before it
   runs, its own session, its log, signals to its process group.
2. Readiness and membership are read over the node RPC (``control identity``, ``monitor
   topology``); nothing here parses logs except to quote their tail in an error.
3. Stopping never trusts a signal: it waits until each process is gone, escalating
   SIGCONT+SIGTERM to SIGKILL, and reports any that survived (``Processes.terminate``).
4. Every change to the record is written through at once (``TrackedCluster``); callers need
   not save it.
5. A node is reached at its own address (``ClusterRecord.host_of``). Where the nodes live
   (this host's loopback, or namespaces of their own) is the cluster's ``network``
   (``network.NodeNetwork``, chosen once from the record): it is asked before every RPC
   (``require``), forks the nodes, cuts and heals real partitions, and removes what it made
   once ``down`` has ended the processes. Nothing here tests which network it is.
6. Every public call names nodes by id (members by number in a mixed cluster), never by
   record: the record of an id is looked up when the call is made.
7. Faults a node carries out itself go over its RPC (``Faults`` frames): loss, delay, blocks,
   one-way cuts (where the network does not cut them for real), its clock and its disks.
   A clock is also kept in the node's record (``clock_offset``, ``clock_rate``) and passed
   to every later start of the node (``--clock-offset``, ``--clock-rate``); ``heal``
   resets it there too.

Errors: ``ClusterError`` (from ``record``) for everything the user should read;
``NodeFailed(ClusterError)`` names the node and its log.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from cluster.ground.errors import ApiError, BadRequest, PeerUnreachable
from cluster.rpc import Call, Identity, Monitor, PeerTimeout, Stop, rpc_call

from . import convergence
from .bookkeeping import TrackedCluster
from .clusterdir import append_entry, hostfile_entries
from .convergence import ASK_AT_ONCE, sees_all
from .faultrequests import check_clock, check_cut, fault_request
from .forks import Forks
from .ledger import Member
from .plan import plan_node
from .processes import log_tail
from .record import BadInput, ClusterError, ClusterRecord, NodeRecord

__all__ = ["LocalCluster", "NodeFailed", "sees_all"]

RPC_TIMEOUT = 2.0


class NodeFailed(ClusterError):
    """A node process that did not start or died; the message names it and its log."""


def _dashboard_trouble(log: str) -> str | None:
    """The node's own words when its dashboard could not start, from its log."""
    try:
        text = Path(log).read_text(errors="replace")
    except OSError:
        return None
    for line in text.splitlines():
        if "Viz: could not listen" in line or "dashboard absent" in line:
            return line.split(": ", 1)[-1].strip()
    return None


# ---- the cluster --------------------------------------------------------------------------


class LocalCluster(TrackedCluster):
    """The processes of one cluster record, with the operations ``rt_cluster`` offers; every
    call names nodes by id (rule 6)."""

    noun = "nodes"  # in the convergence wait's messages

    # ---- RPC -----------------------------------------------------------------------------

    def require_network(self) -> None:
        """ClusterError when nothing may be sent to the nodes now (rule 5)."""
        self.network.require()

    def address(self, node_id: int) -> str:
        """The node's address, once it is safe to send to it (rule 5); else ClusterError."""
        self.require_network()
        return self.record.host_of(self.record.node(node_id))

    async def call(self, node_id: int, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
        """One RPC to a node; ClusterError with the node's id when it fails."""
        rec = self.record.node(node_id)
        host = self.address(node_id)
        try:
            return await rpc_call(host, rec.runtime_port, request, timeout)
        except PeerTimeout:
            hint = " (it is paused)" if self.processes.state(rec) == "paused" else ""
            raise ClusterError(
                f"node {rec.node_id} did not answer within {timeout:g}s{hint}"
            ) from None
        except PeerUnreachable as exc:
            raise ClusterError(f"node {rec.node_id} is not reachable: {exc.message}") from None
        except BadRequest as exc:  # the node refused what the user asked (an unknown pool)
            raise BadInput(f"node {rec.node_id}: {exc.message}") from None
        except ApiError as exc:
            raise ClusterError(f"node {rec.node_id}: {exc.message}") from None

    async def topology(self, node_id: int, timeout: float = 1.0) -> dict[str, Any] | None:
        """The node's topology body, or None when it does not answer."""
        return await self._monitor(node_id, "topology", timeout)

    async def read_faults(self, node_id: int, timeout: float = 1.0) -> dict[str, Any] | None:
        """The faults in force at the node (``monitor faults``, the body of its ``GET
        /api/faults``), or None when it does not answer."""
        return await self._monitor(node_id, "faults", timeout)

    async def _monitor(self, node_id: int, what: str, timeout: float) -> dict[str, Any] | None:
        host = self.address(node_id)
        port = self.record.node(node_id).runtime_port
        try:
            body = await rpc_call(host, port, Monitor(what), timeout)
        except ApiError:  # unreachable, silent, refused, or an older node without that query
            return None
        return body if isinstance(body, dict) else None

    async def probe_ready(self, node_id: int, timeout: float = 1.0) -> dict[str, Any] | None:
        """One look at a starting node: its ``identity`` once this process answers (within
        ``timeout`` seconds) with its dashboard bound (when it has one), else None;
        NodeFailed when it exited or its dashboard could not start."""
        rec = self.record.node(node_id)
        if self.processes.state(rec) == "gone":
            raise await self._failure(rec, "exited during start-up")
        host = self.address(node_id)
        try:
            ident = await rpc_call(host, rec.runtime_port, Identity(), timeout)
        except ApiError:  # not listening yet, or not answering yet
            return None
        if not isinstance(ident, dict) or ident.get("pid") != rec.pid:
            return None
        # The RPC answers before the dashboard is bound: wait for that too.
        if ident.get("dashboard") or not self.viz or rec.dashboard_port < 0:
            return ident
        trouble = _dashboard_trouble(rec.log)
        if trouble:
            self._update_node(rec, state="failed")
            raise NodeFailed(
                f"node {rec.node_id} (pid {rec.pid}) has no dashboard: {trouble} "
                f"(dashboard port {rec.dashboard_port}); its log: {rec.log}"
            )
        return None

    def mark_ready(self, found: Sequence[tuple[int, dict[str, Any]]]) -> list[NodeRecord]:
        """Record each node (by id, with the ``identity`` it answered) as running with its
        real id (an inducted node learns it from the cluster) and dashboard URL, all in one
        write; their new records."""
        seen = [(self.record.node(node_id), ident) for node_id, ident in found]
        news = [
            replace(
                rec,
                node_id=int(ident.get("node_id", rec.node_id)),
                dashboard=str(ident.get("dashboard") or ""),
                state="running",
            )
            for rec, ident in seen
        ]

        def ready(r: ClusterRecord) -> ClusterRecord:
            for (rec, _), new in zip(seen, news, strict=True):
                if all((n.pid, n.started) != (rec.pid, rec.started) for n in r.nodes):
                    continue  # a newer process of the node was started meanwhile
                kept = tuple(n for n in r.nodes if n.node_id != rec.node_id)
                r = replace(r, nodes=kept).with_node(new)
            return r

        if found:
            self._commit(ready)
        return news

    async def wait_ready(self, node_id: int, timeout: float) -> NodeRecord:
        """Wait until the node answers ``identity``; record its real id and dashboard URL."""
        deadline = trio.current_time() + timeout
        while True:
            ident = await self.probe_ready(node_id)
            if ident is not None:
                return self.mark_ready([(node_id, ident)])[0]
            if trio.current_time() >= deadline:
                raise await self.failure(node_id, f"did not come up within {timeout:g}s")
            await trio.sleep(0.1)

    async def failure(self, node_id: int, what: str) -> NodeFailed:
        """Record the node as failed; the error naming it, how it ended, and its log."""
        return await self._failure(self.record.node(node_id), what)

    async def _failure(self, rec: NodeRecord, what: str) -> NodeFailed:
        self._update_node(rec, state="failed")
        how = ""
        if self.processes.state(rec) == "gone":
            await self.wait_recorded()
            self.refresh_states()
            ended = self.record.node(rec.node_id).ended
            how = f" ({ended.describe()})" if ended is not None else ""
            trouble = self.network.port_trouble(self.record.host_of(rec), rec.runtime_port)
            if trouble is not None:
                how += f"; its runtime port is not free: {trouble}"
        return NodeFailed(
            f"node {rec.node_id} (pid {rec.pid}) {what}{how}; its log {rec.log}:\n"
            f"{log_tail(rec.log)}"
        )

    async def faults(self, node_id: int, action: str, **kw: Any) -> Any:
        """One ``Faults`` request: ``kw`` are its fields (``peers`` any sequence)."""
        return await self.call(node_id, fault_request(action, **kw))

    # ---- convergence (``convergence``) ----------------------------------------------------

    async def converged(
        self, expect: set[int], ask: Collection[int] | None = None
    ) -> tuple[int, dict[int, Any]]:
        """How many of the asked nodes (default: ``expect``) list exactly ``expect`` alive,
        and their topology bodies (None for a node that did not answer). At most
        ``ASK_AT_ONCE`` questions are in flight, so a big cluster is not asked all at once."""
        asked = expect if ask is None else set(ask) & expect
        bodies: dict[int, Any] = {}
        limiter = trio.CapacityLimiter(ASK_AT_ONCE)

        async def one(node_id: int) -> None:
            async with limiter:
                bodies[node_id] = await self.topology(node_id)

        async with trio.open_nursery() as nursery:
            for rec in self.record.nodes:
                if rec.node_id in asked:
                    nursery.start_soon(one, rec.node_id)
        return sum(sees_all(b, expect) for b in bodies.values()), bodies

    async def wait_converged(
        self,
        expect: set[int],
        timeout: float,
        progress: Callable[[int], None] | None = None,
        started: float | None = None,
    ) -> float:
        """Wait until every member in ``expect`` lists all of ``expect`` alive; seconds taken
        (since ``started``, a ``time.monotonic()``, when given). ``progress`` is told after
        each look how many do (``convergence.wait_converged``)."""
        return await convergence.wait_converged(self, expect, timeout, progress, started)

    async def require_running(self, expect: set[int]) -> None:
        for rec in self.record.nodes:
            if rec.node_id in expect and self.processes.state(rec) == "gone":
                raise await self._failure(rec, "exited before the cluster converged")

    async def behind(self, expect: set[int], ask: set[int]) -> dict[int, Any]:
        _, bodies = await self.converged(expect, ask=ask)
        return {i: b for i, b in bodies.items() if not sees_all(b, expect)}

    def example(self, expect: set[int], behind: dict[int, Any]) -> str:
        return ""

    # ---- starting and ending (rule 5) -----------------------------------------------------

    def make_network(self) -> None:
        """What the nodes' network needs before they start (the record names it already:
        ``down`` removes it whatever happens next)."""
        self.network.make(self.record.nodes)

    @contextlib.contextmanager
    def open_forker(self) -> Iterator[Forks]:
        """The forks of a launch (``cluster.local.forks``) for the ``with`` block, as the
        nodes' network makes them. On leaving, every fork made is recorded."""
        with self.network.open_forks(self) as forks:
            yield forks

    async def down(self, grace: float = 10.0) -> list[Member]:
        """End every process of the cluster, then remove what its network made (also what a
        crashed ``up`` left unrecorded)."""
        running = await super().down(grace)
        self.network.remove()
        return running

    # ---- operations ----------------------------------------------------------------------

    async def start_node(self, node_id: int, timeout: float = 30.0) -> NodeRecord:
        self.spawn(node_id)
        return await self.wait_ready(node_id, timeout)

    async def kill(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(node_id)
        await self.terminate([node_id], hard=True)
        self._update_node(rec, state="killed")

    async def stop(self, node_id: int, grace: float = 10.0) -> None:
        rec = self.record.node(node_id)
        self.require_live(node_id)
        if self.processes.state(rec) == "running":
            with contextlib.suppress(ClusterError):
                await self.call(node_id, Stop())
                if not await self.wait_gone([node_id], grace):
                    self._update_node(rec, state="stopped")
                    return
        await self.terminate([node_id], grace=grace)
        self._update_node(rec, state="stopped")

    def pause(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(node_id)
        self.signal(node_id, signal.SIGSTOP)
        self._update_node(rec, state="paused")

    def resume(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(node_id)
        self.signal(node_id, signal.SIGCONT)
        self._update_node(rec, state="running")

    async def restart(
        self, node_id: int, *, hard: bool = False, timeout: float = 30.0
    ) -> NodeRecord:
        if self.state_of(node_id) != "gone":
            if hard:
                await self.terminate([node_id], hard=True)
            else:
                await self.stop(node_id)
        return await self.start_node(node_id, timeout)

    async def add(self, *, induct: bool = False, timeout: float = 30.0) -> NodeRecord:
        """Start one more node: appended to the hostfile, or inducted (next free id)."""
        rec = plan_node(self.reload(), induct=induct, viz=self.viz, network=self.network)

        def planned(r: ClusterRecord) -> ClusterRecord:
            if any(n.node_id == rec.node_id for n in r.nodes):
                raise ClusterError(f"node {rec.node_id} was added meanwhile; add again")
            return r.with_node(rec)

        self._commit(planned)
        self.network.add(rec)
        self.spawn(rec.node_id)
        new = await self.wait_ready(rec.node_id, timeout)
        hostfile = Path(self.record.hostfile)
        if induct and len(hostfile_entries(hostfile)) == new.node_id:
            # Keep line offset == id, so a later appended node or a restart finds its id.
            append_entry(hostfile, self.record.host_of(rec), rec.runtime_port)
            self._update_node(new, induct=False)
        return self.record.node(new.node_id)

    async def partition(self, groups: Sequence[Sequence[int]]) -> list[str]:
        """Cut every path between the groups, as the nodes' network does it: each node blocks
        every node of the other groups, or real routes in namespaces, which replace any
        earlier cut; notes about skipped nodes."""
        return await self.network.partition(self.record, groups, self._block)

    async def _block(self, node_id: int, peers: list[int]) -> str | None:
        """The node blocks ``peers`` with its own fault injection; a note if it is gone."""
        if self.processes.state(self.record.node(node_id)) == "gone":
            return f"node {node_id} is not running; skipped"
        await self.faults(node_id, "block", peers=peers)
        return None

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> list[str]:
        """Cut one way (rule 7): every node of ``src`` sends nothing to the nodes of ``dst``,
        as the nodes' network does it; notes about skipped nodes. BadInput for a cut from a
        node to itself or an unknown node."""
        check_cut(self.record, src, dst)
        return await self.network.cut(self.record, src, dst, self._cut)

    async def _cut(self, node_id: int, peers: list[int]) -> str | None:
        if self.processes.state(self.record.node(node_id)) == "gone":
            return f"node {node_id} is not running; skipped"
        await self.faults(node_id, "cut", peers=peers)
        return None

    async def clock(self, i: int, offset: float, rate: float) -> None:
        """Set node ``i``'s clock (rule 7): kept in the record first (a restart keeps it),
        then sent to the node when it runs. BadInput out of range."""
        check_clock(offset, rate)
        rec = self.record.node(i)
        self._update_node(rec, clock_offset=float(offset), clock_rate=float(rate))
        if self.processes.state(rec) != "gone":
            await self.faults(i, "clock", offset=float(offset), rate=float(rate))

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        """Faults on node ``i``'s rt_bdev device ``pool`` (the node ranges them: a 400 is a
        ClusterError naming the node)."""
        request = {"pool": pool, "latency_ms": latency_ms, "errors": errors, "full": full}
        await self.faults(i, "disk", **request)

    async def heal(self) -> list[str]:
        """Remove every partition and cut (real ones too), loss, delay, clock and disk fault;
        notes about nodes that could not be healed."""
        notes = []
        self.network.heal(self.record)
        for rec in self.record.nodes:
            if (rec.clock_offset, rec.clock_rate) != (0.0, 1.0):
                self._update_node(rec, clock_offset=0.0, clock_rate=1.0)
            if self.processes.state(rec) == "gone":
                continue
            try:
                await self.faults(rec.node_id, "heal")
            except ClusterError as exc:
                notes.append(str(exc))
        return notes
