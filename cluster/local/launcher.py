"""Local clusters: the node processes of one cluster record, started, watched, signalled and
stopped, with the operations ``rt_cluster`` offers (``startup.launch`` starts a whole cluster).

Rules:
1. Each node runs ``rt_run start ...`` (``plan.node_command``) as a process of ``processes``:
   its own session, its log, signals to its process group. Node 0 is spawned (``python -m
   cluster.node.cli``); the others are forked from one pre-imported ``cluster.node.zygote``
   (their command line says so), which saves each the ~0.6 s of CPU its imports cost.
2. Readiness and membership are read over the node RPC (``control identity``, ``monitor
   topology``); nothing here parses logs except to quote their tail in an error.
3. Stopping never trusts a signal: it waits until each process is gone, escalating
   SIGCONT+SIGTERM to SIGKILL, and reports any that survived (``Processes.terminate``).
4. ``LocalCluster`` changes the in-memory record; the caller saves it (``save_record``).

Errors: ``ClusterError`` (from ``record``) for everything the user should read;
``NodeFailed(ClusterError)`` names the node and its log.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from cluster.errors import ApiError, PeerUnreachable
from cluster.node import Call, Faults, Identity, Monitor, PeerTimeout, Stop, rpc_call

from .plan import append_entry, hostfile_entries, node_command, plan_node
from .processes import Proc, Processes, child_env, log_tail
from .record import BadInput, ClusterError, ClusterRecord, NodeRecord

__all__ = ["LocalCluster", "NodeFailed", "Progress"]

RPC_TIMEOUT = 2.0
Progress = Callable[[int, int, int, float], None]  # ready, converged, total, elapsed seconds


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


class LocalCluster:
    """The processes of one cluster record, with the operations ``rt_cluster`` offers."""

    def __init__(
        self, record: ClusterRecord, *, python: str | None = None, viz: bool = True
    ) -> None:
        self.record = record
        self.python = python or sys.executable
        self.viz = viz
        self.processes = Processes()  # reaps the node processes spawned here

    # ---- processes -----------------------------------------------------------------------

    def node_command(self, rec: NodeRecord) -> list[str]:
        return node_command(self.record, rec, python=self.python, viz=self.viz)

    @staticmethod
    def _log_start(rec: NodeRecord) -> None:
        with open(rec.log, "ab") as out:
            out.write(f"--- rt_cluster: starting node {rec.node_id} at {time.ctime()}\n".encode())

    def _started(self, rec: NodeRecord, proc: Proc) -> NodeRecord:
        rec = replace(rec, pid=proc.pid, started=proc.started, state="starting")
        self.record = self.record.with_node(rec)
        return rec

    def spawn_many(self, recs: Sequence[NodeRecord]) -> None:
        """Start many nodes by forking them from one pre-imported zygote (``cluster.node.zygote``);
        whatever it cannot start is spawned one by one."""
        todo = list(recs)
        if len(todo) > 1:
            zygote_argv = [self.python, "-m", "cluster.node.zygote"]
            with self.processes.open_zygote(zygote_argv, child_env()) as zygote:
                while todo:
                    rec = todo[0]
                    self._log_start(rec)
                    argv = self.node_command(rec)[3:]  # after "python -m cluster.node.cli"
                    proc = zygote.fork(argv, rec.log, f"node {rec.node_id}")
                    if proc is None:
                        break
                    self._started(todo.pop(0), proc)
        for rec in todo:
            self.spawn(rec)

    def spawn(self, rec: NodeRecord) -> NodeRecord:
        """Start the process of ``rec`` (detached into its own session); record its pid."""
        self._log_start(rec)
        proc = self.processes.spawn(self.node_command(rec), rec.log, child_env())
        return self._started(rec, proc)

    def state_of(self, rec: NodeRecord) -> str:
        """The node's process state now: ``running``, ``paused`` or ``gone``."""
        return self.processes.state(rec)

    def signal(self, rec: NodeRecord, sig: signal.Signals) -> bool:
        """Send ``sig`` to the node's process group; False if the process is gone."""
        return self.processes.signal(rec, sig)

    async def wait_gone(self, recs: Sequence[NodeRecord], timeout: float) -> list[NodeRecord]:
        """Wait until every process is gone or ``timeout`` s pass; the survivors."""
        return await self.processes.wait_gone(recs, timeout)

    async def terminate(
        self, recs: Sequence[NodeRecord], *, grace: float = 10.0, hard: bool = False
    ) -> None:
        """End the processes (SIGTERM, then SIGKILL after ``grace`` s); verify they are gone."""
        await self.processes.terminate(recs, grace=grace, hard=hard, name=_node_and_pid)

    def set_state(self, node_id: int, state: str) -> None:
        self.record = self.record.with_node(replace(self.record.node(node_id), state=state))

    def refresh_states(self) -> None:
        """Reconcile recorded states with the processes (a node that died becomes ``exited``)."""
        for r in self.record.nodes:
            now = self.state_of(r)
            if now == "gone" and r.state in ("running", "paused", "starting"):
                self.set_state(r.node_id, "exited")
            elif now == "paused" and r.state != "paused":
                self.set_state(r.node_id, "paused")
            elif now == "running" and r.state in ("paused", "exited", "stopped", "killed"):
                self.set_state(r.node_id, "running")

    def live_nodes(self) -> list[NodeRecord]:
        return [r for r in self.record.nodes if self.state_of(r) != "gone"]

    # ---- RPC -----------------------------------------------------------------------------

    async def call(self, rec: NodeRecord, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
        """One RPC to a node; ClusterError with the node's id when it fails."""
        try:
            return await rpc_call(self.record.host, rec.runtime_port, request, timeout)
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
        try:
            body = await rpc_call(self.record.host, rec.runtime_port, Monitor("topology"), timeout)
        except ApiError:  # unreachable, silent, or refused
            return None
        return body if isinstance(body, dict) else None

    async def wait_ready(self, node_id: int, timeout: float) -> NodeRecord:
        """Wait until the node answers ``identity``; record its real id and dashboard URL."""
        rec = self.record.node(node_id)
        deadline = trio.current_time() + timeout
        while True:
            if self.state_of(rec) == "gone":
                self.set_state(node_id, "failed")
                raise NodeFailed(
                    f"node {node_id} (pid {rec.pid}) exited during start-up; its log {rec.log}:"
                    f"\n{log_tail(rec.log)}"
                )
            try:
                ident = await rpc_call(self.record.host, rec.runtime_port, Identity(), 1.0)
            except ApiError:  # not listening yet, or not answering yet
                ident = None
            if isinstance(ident, dict) and ident.get("pid") == rec.pid:
                # The RPC answers before the dashboard is bound: wait for that too.
                if ident.get("dashboard") or not self.viz or rec.dashboard_port < 0:
                    break
                trouble = _dashboard_trouble(rec.log)
                if trouble:
                    self.set_state(node_id, "failed")
                    raise NodeFailed(
                        f"node {node_id} (pid {rec.pid}) has no dashboard: {trouble} "
                        f"(dashboard port {rec.dashboard_port}); its log: {rec.log}"
                    )
            if trio.current_time() >= deadline:
                self.set_state(node_id, "failed")
                raise NodeFailed(
                    f"node {node_id} (pid {rec.pid}) did not come up within {timeout:g}s; "
                    f"its log {rec.log}:\n{log_tail(rec.log)}"
                )
            await trio.sleep(0.1)
        real_id = int(ident.get("node_id", node_id))
        url = str(ident.get("dashboard") or "")
        new = replace(rec, node_id=real_id, dashboard=url, state="running")
        if real_id != node_id:  # an inducted node learns its id from the cluster
            self.record = replace(
                self.record, nodes=tuple(n for n in self.record.nodes if n.node_id != node_id)
            )
        self.record = self.record.with_node(new)
        return new

    async def converged(self, expect: set[int]) -> tuple[int, dict[int, Any]]:
        """How many of the expected nodes list exactly ``expect`` alive, and their bodies."""
        bodies: dict[int, Any] = {}

        async def ask(rec: NodeRecord) -> None:
            bodies[rec.node_id] = await self.topology(rec)

        async with trio.open_nursery() as nursery:
            for rec in self.record.nodes:
                if rec.node_id in expect:
                    nursery.start_soon(ask, rec)
        count = 0
        for body in bodies.values():
            if body is None:
                continue
            alive = {n["node_id"] for n in body.get("nodes", ()) if n.get("state") == "alive"}
            count += alive == expect
        return count, bodies

    async def wait_converged(
        self,
        expect: set[int],
        timeout: float,
        progress: Progress | None = None,
        started: float | None = None,
    ) -> float:
        """Wait until every node in ``expect`` lists all of ``expect`` alive; seconds taken."""
        t0 = time.monotonic() if started is None else started
        while True:
            for rec in self.record.nodes:
                if rec.node_id in expect and self.state_of(rec) == "gone":
                    self.set_state(rec.node_id, "failed")
                    raise NodeFailed(
                        f"node {rec.node_id} (pid {rec.pid}) exited before the cluster "
                        f"converged; its log {rec.log}:\n{log_tail(rec.log)}"
                    )
            count, _ = await self.converged(expect)
            elapsed = time.monotonic() - t0
            if progress is not None:
                progress(len(expect), count, len(expect), elapsed)
            if count == len(expect):
                return elapsed
            if elapsed > timeout:
                raise ClusterError(
                    f"the cluster did not converge within {timeout:g}s: {count} of "
                    f"{len(expect)} nodes list all {len(expect)} alive (logs in "
                    f"{self.record.directory})"
                )
            await trio.sleep(0.25)

    async def faults(self, rec: NodeRecord, action: str, **kw: Any) -> Any:
        request = Faults(action, kw.get("peer"), kw.get("value", 0), tuple(kw.get("peers", ())))
        return await self.call(rec, request)

    # ---- operations ----------------------------------------------------------------------

    async def start_node(self, node_id: int, timeout: float = 30.0) -> NodeRecord:
        rec = self.record.node(node_id)
        self.spawn(rec)
        return await self.wait_ready(node_id, timeout)

    async def kill(self, node_id: int) -> None:
        rec = self.record.node(node_id)
        self._require_live(rec)
        await self.terminate([rec], hard=True)
        self.set_state(node_id, "killed")

    async def stop(self, node_id: int, grace: float = 10.0) -> None:
        rec = self.record.node(node_id)
        self._require_live(rec)
        if self.state_of(rec) == "running":
            with contextlib.suppress(ClusterError):
                await self.call(rec, Stop())
                if not await self.wait_gone([rec], grace):
                    self.set_state(node_id, "stopped")
                    return
        await self.terminate([rec], grace=grace)
        self.set_state(node_id, "stopped")

    def pause(self, node_id: int) -> None:
        rec = self.record.node(node_id)
        self._require_live(rec)
        self.signal(rec, signal.SIGSTOP)
        self.set_state(node_id, "paused")

    def resume(self, node_id: int) -> None:
        rec = self.record.node(node_id)
        self._require_live(rec)
        self.signal(rec, signal.SIGCONT)
        self.set_state(node_id, "running")

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
        rec = plan_node(self.record, induct=induct, viz=self.viz)
        self.record = self.record.with_node(rec)
        self.spawn(rec)
        new = await self.wait_ready(rec.node_id, timeout)
        hostfile = Path(self.record.hostfile)
        if induct and len(hostfile_entries(hostfile)) == new.node_id:
            # Keep line offset == id, so a later appended node or a restart finds its id.
            append_entry(hostfile, self.record.host, rec.runtime_port)
            self.record = self.record.with_node(replace(new, induct=False))
        return self.record.node(new.node_id)

    async def partition(self, groups: Sequence[Sequence[int]]) -> list[str]:
        """Each node blocks every node of the other groups; notes about skipped nodes."""
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

    async def heal(self) -> list[str]:
        notes = []
        for rec in self.record.nodes:
            if self.state_of(rec) == "gone":
                continue
            try:
                await self.faults(rec, "heal")
            except ClusterError as exc:
                notes.append(str(exc))
        return notes

    async def down(self, grace: float = 10.0) -> None:
        """Every process of the cluster ends (verified)."""
        try:
            await self.terminate(list(self.record.nodes), grace=grace)
        finally:
            for rec in self.record.nodes:
                if self.state_of(rec) == "gone" and rec.state not in ("killed", "failed"):
                    self.set_state(rec.node_id, "stopped")

    def _require_live(self, rec: NodeRecord) -> None:
        if self.state_of(rec) == "gone":
            raise BadInput(
                f"node {rec.node_id} is not running (state {rec.state}); "
                f"start it with: rt_cluster restart {rec.node_id} --name {self.record.name}"
            )


def _node_and_pid(rec: NodeRecord) -> str:
    return f"node {rec.node_id} pid {rec.pid}"
