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
5. A node is reached at its own address (``ClusterRecord.host_of``). When the nodes live in
   namespaces of their own (``netns``), nothing is sent to them unless the cluster's bridge
   exists (``netns.require_bridge``, checked before every RPC); each node process is forked by
   a zygote started inside its namespace; partitions are real (routes in the namespaces)
   while loss and delay stay simulated in the processes; ``down`` removes the namespaces and
   the bridge once the processes are gone.

Errors: ``ClusterError`` (from ``record``) for everything the user should read;
``NodeFailed(ClusterError)`` names the node and its log.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from cluster.ground.errors import ApiError, PeerUnreachable
from cluster.rpc import Call, Faults, Identity, Monitor, PeerTimeout, Stop, rpc_call

from . import netns
from .bookkeeping import TrackedCluster
from .forks import AheadForks, Forks
from .holders import port_trouble
from .ledger import Member, procs_dir
from .plan import append_entry, hostfile_entries, plan_node
from .processes import Zygote, child_env, log_tail
from .record import ClusterError, ClusterRecord, NodeRecord

__all__ = ["LocalCluster", "NodeFailed", "sees_all"]

RPC_TIMEOUT = 2.0
ZYGOTES_AHEAD = 4  # zygotes warming up at once when each node needs its own (namespaces)
ASK_AT_ONCE = 64  # questions in flight at once when every node of a cluster is asked


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


def sees_all(body: Any, expect: set[int]) -> bool:
    """Whether a node's topology body (None: no answer) lists exactly ``expect`` alive."""
    if not isinstance(body, dict):
        return False
    alive = {n.get("node_id") for n in body.get("nodes", ()) if n.get("state") == "alive"}
    return alive == expect


# ---- the cluster --------------------------------------------------------------------------


class LocalCluster(TrackedCluster):
    """The processes of one cluster record, with the operations ``rt_cluster`` offers."""

    # ---- RPC -----------------------------------------------------------------------------

    def require_network(self) -> None:
        """ClusterError when the nodes live in namespaces and the bridge is gone (rule 5)."""
        netns.require_bridge(self.record)

    def address(self, rec: NodeRecord) -> str:
        """The node's address, once it is safe to send to it (rule 5); else ClusterError."""
        self.require_network()
        return self.record.host_of(rec)

    async def call(self, rec: NodeRecord, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
        """One RPC to a node; ClusterError with the node's id when it fails."""
        host = self.address(rec)
        try:
            return await rpc_call(host, rec.runtime_port, request, timeout)
        except PeerTimeout:
            hint = " (it is paused)" if self.state_of(rec) == "paused" else ""
            raise ClusterError(
                f"node {rec.node_id} did not answer within {timeout:g}s{hint}"
            ) from None
        except PeerUnreachable as exc:
            raise ClusterError(f"node {rec.node_id} is not reachable: {exc.message}") from None
        except ApiError as exc:
            raise ClusterError(f"node {rec.node_id}: {exc.message}") from None

    async def topology(self, rec: NodeRecord, timeout: float = 1.0) -> dict[str, Any] | None:
        """The node's topology body, or None when it does not answer."""
        return await self._monitor(rec, "topology", timeout)

    async def read_faults(self, rec: NodeRecord, timeout: float = 1.0) -> dict[str, Any] | None:
        """The faults in force at the node (``monitor faults``, the body of its ``GET
        /api/faults``), or None when it does not answer."""
        return await self._monitor(rec, "faults", timeout)

    async def _monitor(self, rec: NodeRecord, what: str, timeout: float) -> dict[str, Any] | None:
        host = self.address(rec)
        try:
            body = await rpc_call(host, rec.runtime_port, Monitor(what), timeout)
        except ApiError:  # unreachable, silent, refused, or an older node without that query
            return None
        return body if isinstance(body, dict) else None

    async def probe_ready(self, rec: NodeRecord, timeout: float = 1.0) -> dict[str, Any] | None:
        """One look at a starting node: its ``identity`` once this process answers (within
        ``timeout`` seconds) with its dashboard bound (when it has one), else None;
        NodeFailed when it exited or its dashboard could not start."""
        if self.state_of(rec) == "gone":
            raise await self.failure(rec, "exited during start-up")
        host = self.address(rec)
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

    def mark_ready(self, found: Sequence[tuple[NodeRecord, dict[str, Any]]]) -> list[NodeRecord]:
        """Record each node as running with its real id (an inducted node learns it from the
        cluster) and dashboard URL, all in one write; their new records."""
        news = [
            replace(
                rec,
                node_id=int(ident.get("node_id", rec.node_id)),
                dashboard=str(ident.get("dashboard") or ""),
                state="running",
            )
            for rec, ident in found
        ]

        def ready(r: ClusterRecord) -> ClusterRecord:
            for (rec, _), new in zip(found, news, strict=True):
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
        rec = self.record.node(node_id)
        deadline = trio.current_time() + timeout
        while True:
            ident = await self.probe_ready(rec)
            if ident is not None:
                return self.mark_ready([(rec, ident)])[0]
            if trio.current_time() >= deadline:
                raise await self.failure(rec, f"did not come up within {timeout:g}s")
            await trio.sleep(0.1)

    async def failure(self, rec: NodeRecord, what: str) -> NodeFailed:
        """Record the node as failed; the error naming it, how it ended, and its log."""
        self._update_node(rec, state="failed")
        how = ""
        if self.state_of(rec) == "gone":
            await self.wait_recorded()
            self.refresh_states()
            ended = self.record.node(rec.node_id).ended
            how = f" ({ended.describe()})" if ended is not None else ""
            host = self.record.host_of(rec)
            if (trouble := None if rec.netns else port_trouble(host, rec.runtime_port)) is not None:
                how += f"; its runtime port is not free: {trouble}"
        return NodeFailed(
            f"node {rec.node_id} (pid {rec.pid}) {what}{how}; its log {rec.log}:\n"
            f"{log_tail(rec.log)}"
        )

    async def converged(
        self, expect: set[int], ask: Collection[int] | None = None
    ) -> tuple[int, dict[int, Any]]:
        """How many of the asked nodes (default: ``expect``) list exactly ``expect`` alive,
        and their topology bodies (None for a node that did not answer). At most
        ``ASK_AT_ONCE`` questions are in flight, so a big cluster is not asked all at once."""
        asked = expect if ask is None else set(ask) & expect
        bodies: dict[int, Any] = {}
        limiter = trio.CapacityLimiter(ASK_AT_ONCE)

        async def one(rec: NodeRecord) -> None:
            async with limiter:
                bodies[rec.node_id] = await self.topology(rec)

        async with trio.open_nursery() as nursery:
            for rec in self.record.nodes:
                if rec.node_id in asked:
                    nursery.start_soon(one, rec)
        return sum(sees_all(b, expect) for b in bodies.values()), bodies

    async def wait_converged(
        self,
        expect: set[int],
        timeout: float,
        progress: Callable[[int], None] | None = None,
        started: float | None = None,
    ) -> float:
        """Wait until every node in ``expect`` lists all of ``expect`` alive; seconds taken
        (since ``started``, a ``time.monotonic()``, when given). ``progress`` is told after
        each look how many do. Nodes already seen converged are asked again only once all
        are, in one last look that must find them all still converged."""
        t0 = time.monotonic() if started is None else started
        pending = set(expect)
        while True:
            for rec in self.record.nodes:
                if rec.node_id in expect and self.state_of(rec) == "gone":
                    raise await self.failure(rec, "exited before the cluster converged")
            count, bodies = await self.converged(expect, ask=pending or expect)
            confirming = not pending
            pending = {i for i, b in bodies.items() if not sees_all(b, expect)}
            if not confirming:
                count = len(expect) - len(pending)
            elapsed = time.monotonic() - t0
            if progress is not None:
                progress(count)
            if confirming and not pending:
                return elapsed
            if elapsed > timeout:
                raise ClusterError(
                    f"the cluster did not converge within {timeout:g}s: {count} of "
                    f"{len(expect)} nodes list all {len(expect)} alive (logs in "
                    f"{self.record.directory})"
                )
            if pending:  # the last look comes at once
                await trio.sleep(max(0.25, len(expect) / 500))

    async def faults(self, rec: NodeRecord, action: str, **kw: Any) -> Any:
        request = Faults(action, kw.get("peer"), kw.get("value", 0), tuple(kw.get("peers", ())))
        return await self.call(rec, request)

    # ---- starting in namespaces and ending (rule 5) ---------------------------------------

    _network_made = False  # once until down: made early to hold a chosen subnet, kept

    def make_network(self) -> None:
        """The cluster's bridge and namespaces, when its nodes have addresses of their own
        (the record names them already: ``down`` removes them whatever happens next)."""
        if self.record.network is not None and not self._network_made:
            netns.make_network(self.directory, self.record.network, self.record.nodes)
            self._network_made = True

    @contextlib.contextmanager
    def _zygote_for(self, rec: NodeRecord) -> Iterator[Zygote]:
        """A zygote whose forks run where ``rec`` runs: inside its namespace, if it has one."""
        if not rec.netns:
            with self.open_zygote() as zygote:
                yield zygote
            return
        procs_dir(self.directory).mkdir(parents=True, exist_ok=True)
        argv = netns.enter_argv(rec.netns, [self.python, "-m", "cluster.node.zygote"])
        errors = self.directory / "zygote.log"
        with self.processes.open_zygote(argv, child_env(), errors) as zygote:
            yield zygote

    @contextlib.contextmanager
    def open_forker(self) -> Iterator[Forks]:
        """The forks of a launch (``cluster.local.forks``) for the ``with`` block: from one
        zygote, or, in namespaces, each from a zygote of its own, the next ``ZYGOTES_AHEAD``
        warming up meanwhile. On leaving, every fork made is recorded."""
        if self.record.network is None:
            with self.open_zygote() as z, contextlib.closing(AheadForks(self, z)) as forks:
                yield forks
            return
        order = [n.node_id for n in self.record.nodes]
        warm: dict[int, tuple[contextlib.ExitStack, Zygote]] = {}

        def fork(rec: NodeRecord) -> NodeRecord:
            at = order.index(rec.node_id) if rec.node_id in order else len(order)
            for nid in [rec.node_id, *order[at + 1 : at + ZYGOTES_AHEAD]]:
                if nid not in warm:
                    stack = contextlib.ExitStack()
                    warm[nid] = (
                        stack,
                        stack.enter_context(self._zygote_for(self.record.node(nid))),
                    )
            stack, zygote = warm.pop(rec.node_id)
            with stack:
                return self.fork(zygote, rec)

        try:
            yield Forks(fork)
        finally:
            for stack, _ in warm.values():
                stack.close()

    def spawn(self, rec: NodeRecord) -> NodeRecord:
        """Start the process of one node, from a zygote of its own (in its namespace)."""
        with self._zygote_for(rec) as zygote:
            return self.fork(zygote, rec)

    async def down(self, grace: float = 10.0) -> list[Member]:
        """End every process of the cluster, then remove its namespaces, veth pairs and
        bridge (also those a crashed ``up`` left unrecorded; the unreachable route stays)."""
        running = await super().down(grace)
        self._network_made = False
        key = self.record.network.key if self.record.network else netns.network_key(self.directory)
        if netns.leftovers(key):
            netns.require_privileges(f"removing the network of cluster {self.record.name!r}")
            netns.remove_network(key)
        return running

    # ---- operations ----------------------------------------------------------------------

    async def start_node(self, node_id: int, timeout: float = 30.0) -> NodeRecord:
        rec = self.record.node(node_id)
        self.spawn(rec)
        return await self.wait_ready(node_id, timeout)

    async def kill(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(rec)
        await self.terminate([rec], hard=True)
        self._update_node(rec, state="killed")

    async def stop(self, node_id: int, grace: float = 10.0) -> None:
        rec = self.record.node(node_id)
        self.require_live(rec)
        if self.state_of(rec) == "running":
            with contextlib.suppress(ClusterError):
                await self.call(rec, Stop())
                if not await self.wait_gone([rec], grace):
                    self._update_node(rec, state="stopped")
                    return
        await self.terminate([rec], grace=grace)
        self._update_node(rec, state="stopped")

    def pause(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(rec)
        self.signal(rec, signal.SIGSTOP)
        self._update_node(rec, state="paused")

    def resume(self, node_id: int) -> None:
        rec = self.record.member(node_id)
        self.require_live(rec)
        self.signal(rec, signal.SIGCONT)
        self._update_node(rec, state="running")

    async def restart(
        self, node_id: int, *, hard: bool = False, timeout: float = 30.0
    ) -> NodeRecord:
        rec = self.record.node(node_id)
        if self.state_of(rec) != "gone":
            if hard:
                await self.terminate([rec], hard=True)
            else:
                await self.stop(node_id)
        return await self.start_node(node_id, timeout)

    async def add(self, *, induct: bool = False, timeout: float = 30.0) -> NodeRecord:
        """Start one more node: appended to the hostfile, or inducted (next free id)."""
        rec = plan_node(self.reload(), induct=induct, viz=self.viz)

        def planned(r: ClusterRecord) -> ClusterRecord:
            if any(n.node_id == rec.node_id for n in r.nodes):
                raise ClusterError(f"node {rec.node_id} was added meanwhile; add again")
            return r.with_node(rec)

        self._commit(planned)
        if self.record.network is not None:
            self.require_network()
            netns.make_node(self.record.network, rec)
        self.spawn(rec)
        new = await self.wait_ready(rec.node_id, timeout)
        hostfile = Path(self.record.hostfile)
        if induct and len(hostfile_entries(hostfile)) == new.node_id:
            # Keep line offset == id, so a later appended node or a restart finds its id.
            append_entry(hostfile, self.record.host_of(rec), rec.runtime_port)
            self._update_node(new, induct=False)
        return self.record.node(new.node_id)

    async def partition(self, groups: Sequence[Sequence[int]]) -> list[str]:
        """Each node blocks every node of the other groups; notes about skipped nodes. In
        namespaces the cut is real and replaces any earlier one (``netns.cut``)."""
        if self.record.network is not None:
            return self._cut(groups)
        notes = []
        for g, members in enumerate(groups):
            others = [i for h, grp in enumerate(groups) if h != g for i in grp]
            for nid in members:
                rec = self.record.node(nid)
                if self.state_of(rec) == "gone":
                    notes.append(f"node {nid} is not running; skipped")
                    continue
                await self.faults(rec, "block", peers=others)
        return notes

    def _cut(self, groups: Sequence[Sequence[int]]) -> list[str]:
        self.require_network()
        for g, members in enumerate(groups):
            others = [i for h, grp in enumerate(groups) if h != g for i in grp]
            away = [self.record.host_of(self.record.node(i)) for i in others]
            for nid in members:
                netns.cut(self.record.node(nid), away)
        return []

    async def heal(self) -> list[str]:
        """Remove every partition (real ones too), loss and delay; notes about nodes that
        could not be healed."""
        notes = []
        if self.record.network is not None:
            self.require_network()
            for rec in self.record.nodes:
                netns.restore(rec)
        for rec in self.record.nodes:
            if self.state_of(rec) == "gone":
                continue
            try:
                await self.faults(rec, "heal")
            except ClusterError as exc:
                notes.append(str(exc))
        return notes
