"""Local clusters: node processes on one host, started, watched, signalled and stopped.

Rules:
1. Each node runs ``rt_run start ...`` in its own session, stdout and stderr appended to its
   log, so it outlives the command that started it and a terminal's Ctrl-C never reaches it.
   Signals go to the node's process group. Node 0 is spawned (``python -m cluster.node.cli``); the
   others are forked from one pre-imported ``cluster.node.zygote`` (their command line says so),
   which saves each the ~0.6 s of CPU its imports cost.
2. Readiness and membership are read over the node RPC (``control identity``, ``monitor
   topology``); nothing here parses logs except to quote their tail in an error.
3. Stopping never trusts a signal: it waits until each process is gone, escalating
   SIGCONT+SIGTERM to SIGKILL, and reports any that survived.
4. ``LocalCluster`` changes the in-memory record; the caller saves it (``save_record``).

Errors: ``ClusterError`` (from clusterstate) for everything the user should read;
``NodeFailed(ClusterError)`` names the node and its log.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import trio

from cluster.errors import ApiError
from cluster.node.rpc import rpc_call

from .ports import check_port_free, pick_free_ports
from .record import (
    BadInput,
    ClusterError,
    ClusterRecord,
    NodeRecord,
    create_time,
    process_state,
)

__all__ = ["LocalCluster", "NodeFailed", "launch", "plan_cluster"]

log = logging.getLogger(__name__)
PROJECT_ROOT = Path(__file__).resolve().parents[2]
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


def log_tail(path: str, lines: int = 12) -> str:
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return "(no log written)"
    tail = text.splitlines()[-lines:]
    return "\n".join("    " + line for line in tail) if tail else "(log is empty)"


# ---- the cluster --------------------------------------------------------------------------


class LocalCluster:
    """The processes of one cluster record, with the operations ``rt_cluster`` offers."""

    def __init__(
        self, record: ClusterRecord, *, python: str | None = None, viz: bool = True
    ) -> None:
        self.record = record
        self.python = python or sys.executable
        self.viz = viz
        self._children: set[int] = set()  # pids this process spawned and must reap

    # ---- processes -----------------------------------------------------------------------

    def node_command(self, rec: NodeRecord) -> list[str]:
        cmd = [
            self.python,
            "-m",
            "cluster.node.cli",
            "start",
            "--host",
            self.record.host,
            "--port",
            str(rec.runtime_port),
            "--hostfile",
            self.record.hostfile,
            "--events",
            rec.events,
            "--log-file",
            rec.log,
            "--data-dir",
            str(Path(rec.log).parent / f"node-{rec.node_id}-data"),
        ]
        if self.viz and rec.dashboard_port >= 0:
            cmd += ["--viz-port", str(rec.dashboard_port)]
        else:
            cmd += ["--no-viz"]
        if self.record.config:
            cmd += ["--config", self.record.config]
        if rec.induct:
            cmd += ["--induct"]
        return cmd

    @staticmethod
    def _env() -> dict[str, str]:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            p for p in (str(PROJECT_ROOT), env.get("PYTHONPATH", "")) if p
        )
        env["PYTHONUNBUFFERED"] = "1"
        return env

    @staticmethod
    def _log_start(rec: NodeRecord) -> None:
        with open(rec.log, "ab") as out:
            out.write(f"--- rt_cluster: starting node {rec.node_id} at {time.ctime()}\n".encode())

    def _started(self, rec: NodeRecord, pid: int) -> NodeRecord:
        rec = replace(rec, pid=pid, started=create_time(pid), state="starting")
        self.record = self.record.with_node(rec)
        return rec

    def spawn_many(self, recs: Sequence[NodeRecord]) -> None:
        """Start many nodes by forking them from one pre-imported zygote (``cluster.node.zygote``);
        whatever it cannot start is spawned one by one."""
        todo = list(recs)
        if len(todo) > 1:
            # As a context manager, Popen closes both pipes and waits: the zygote ends at the
            # end of its stdin, and the nodes it forked live on.
            with subprocess.Popen(
                [self.python, "-m", "cluster.node.zygote"],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                env=self._env(),
                text=True,
            ) as zygote:
                self._fork_from(zygote, todo)
        for rec in todo:
            self.spawn(rec)

    def _fork_from(self, zygote: subprocess.Popen[str], todo: list[NodeRecord]) -> None:
        """Have ``zygote`` fork the nodes of ``todo``, removing each one it started."""
        assert zygote.stdin is not None
        assert zygote.stdout is not None
        try:
            while todo:
                rec = todo[0]
                self._log_start(rec)
                argv = self.node_command(rec)[3:]  # after "python -m cluster.node.cli"
                zygote.stdin.write(json.dumps({"argv": argv, "log": rec.log}) + "\n")
                zygote.stdin.flush()
                reply = json.loads(zygote.stdout.readline() or "{}")
                if not isinstance(reply.get("pid"), int):
                    log.warning("zygote could not start node %d: %s", rec.node_id, reply)
                    return
                self._started(todo.pop(0), reply["pid"])
        except (OSError, ValueError) as exc:
            log.warning("zygote failed (%s); spawning the rest one by one", exc)
            zygote.kill()

    def spawn(self, rec: NodeRecord) -> NodeRecord:
        """Start the process of ``rec`` (detached into its own session); record its pid."""
        env = self._env()
        self._log_start(rec)
        # posix_spawn rather than Popen: the node must outlive us, and a Popen object of a
        # running child complains when collected. We reap our own children in state_of().
        cmd = self.node_command(rec)
        pid = os.posix_spawn(
            cmd[0],
            cmd,
            env,
            file_actions=[
                (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                (os.POSIX_SPAWN_OPEN, 1, rec.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644),
                (os.POSIX_SPAWN_DUP2, 1, 2),
            ],
            setsid=True,
        )
        self._children.add(pid)
        return self._started(rec, pid)

    def state_of(self, rec: NodeRecord) -> str:
        """The node's process state now: ``running``, ``paused`` or ``gone``."""
        if rec.pid in self._children:
            try:
                pid, _ = os.waitpid(rec.pid, os.WNOHANG)
            except ChildProcessError:
                pid = rec.pid
            if pid == rec.pid:  # reaped here, so no zombie is left behind
                self._children.discard(rec.pid)
                return "gone"
        return process_state(rec.pid, rec.started)

    def signal(self, rec: NodeRecord, sig: signal.Signals) -> bool:
        """Send ``sig`` to the node's process group; False if the process is gone."""
        if self.state_of(rec) == "gone":
            return False
        try:
            os.killpg(rec.pid, sig)
        except ProcessLookupError:
            return False
        except PermissionError:
            os.kill(rec.pid, sig)
        return True

    async def wait_gone(self, recs: Sequence[NodeRecord], timeout: float) -> list[NodeRecord]:
        """Wait until every process is gone or ``timeout`` s pass; the survivors."""
        deadline = trio.current_time() + timeout
        while True:
            alive = [r for r in recs if self.state_of(r) != "gone"]
            if not alive or trio.current_time() >= deadline:
                return alive
            await trio.sleep(0.05)

    async def terminate(
        self, recs: Sequence[NodeRecord], *, grace: float = 10.0, hard: bool = False
    ) -> None:
        """End the processes (SIGTERM, then SIGKILL after ``grace`` s); verify they are gone."""
        recs = [r for r in recs if r.pid > 0]
        if not hard:
            for r in recs:
                self.signal(r, signal.SIGCONT)  # a stopped process cannot act on SIGTERM
                self.signal(r, signal.SIGTERM)
            recs = await self.wait_gone(recs, grace)
        for r in recs:
            self.signal(r, signal.SIGKILL)
            self.signal(r, signal.SIGCONT)
        left = await self.wait_gone(recs, 10.0)
        if left:
            pids = ", ".join(f"node {r.node_id} pid {r.pid}" for r in left)
            raise ClusterError(f"processes survived SIGKILL: {pids}")

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

    async def call(
        self, rec: NodeRecord, frame: dict[str, Any], timeout: float = RPC_TIMEOUT
    ) -> Any:
        """One RPC to a node; ClusterError with the node's id when it fails."""
        try:
            return await rpc_call(self.record.host, rec.runtime_port, frame, timeout)
        except trio.TooSlowError:
            hint = " (it is paused)" if self.state_of(rec) == "paused" else ""
            raise ClusterError(
                f"node {rec.node_id} did not answer within {timeout:g}s{hint}"
            ) from None
        except (OSError, trio.BrokenResourceError, trio.ClosedResourceError) as exc:
            raise ClusterError(f"node {rec.node_id} is not reachable: {exc}") from None
        except ApiError as exc:
            raise ClusterError(f"node {rec.node_id}: {exc.message}") from None

    async def topology(self, rec: NodeRecord, timeout: float = 1.0) -> dict[str, Any] | None:
        """The node's topology body, or None when it does not answer."""
        try:
            body = await rpc_call(
                self.record.host,
                rec.runtime_port,
                {"k": "monitor", "query": "topology", "params": {}},
                timeout,
            )
        except (
            ApiError,
            OSError,
            trio.TooSlowError,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            Exception,
        ):
            return None
        return body if isinstance(body, dict) else None

    async def wait_ready(self, node_id: int, timeout: float) -> NodeRecord:
        """Wait until the node answers ``identity``; record its real id and dashboard URL."""
        rec = self.record.node(node_id)
        deadline = trio.current_time() + timeout
        frame = {"k": "control", "op": "identity"}
        while True:
            if self.state_of(rec) == "gone":
                self.set_state(node_id, "failed")
                raise NodeFailed(
                    f"node {node_id} (pid {rec.pid}) exited during start-up; its log {rec.log}:"
                    f"\n{log_tail(rec.log)}"
                )
            try:
                ident = await rpc_call(self.record.host, rec.runtime_port, frame, 1.0)
            except Exception:
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
        frame: dict[str, Any] = {
            "k": "control",
            "op": "faults",
            "action": action,
            "peer": kw.get("peer"),
            "value": kw.get("value", 0),
            "peers": list(kw.get("peers", ())),
        }
        return await self.call(rec, frame)

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
                await self.call(rec, {"k": "control", "op": "stop"})
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
        host = self.record.host
        used_rt = {n.runtime_port for n in self.record.nodes}
        used_viz = {n.dashboard_port for n in self.record.nodes}
        rt_port = _next_port(host, used_rt, udp=True)
        viz_port = _next_port(host, used_viz | used_rt | {rt_port}, udp=False) if self.viz else -1
        next_id = max((n.node_id for n in self.record.nodes), default=-1) + 1
        hostfile = Path(self.record.hostfile)
        entries = _hostfile_entries(hostfile)
        if not induct:
            if len(entries) != next_id:
                raise ClusterError(
                    f"the hostfile {hostfile} has {len(entries)} entries but the next node id is "
                    f"{next_id}; add this node with --induct"
                )
            _append_entry(hostfile, host, rt_port)
        d = Path(self.record.directory)
        rec = NodeRecord(
            node_id=next_id,
            pid=0,
            runtime_port=rt_port,
            dashboard_port=viz_port,
            dashboard="",
            log=str(d / f"node-{next_id}.log"),
            events=str(d / f"node-{next_id}.events"),
            state="starting",
            induct=induct,
        )
        self.record = self.record.with_node(rec)
        self.spawn(rec)
        new = await self.wait_ready(next_id, timeout)
        if induct and len(_hostfile_entries(hostfile)) == new.node_id:
            # Keep line offset == id, so a later appended node or a restart finds its id.
            _append_entry(hostfile, host, rt_port)
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


def _next_port(host: str, used: set[int], *, udp: bool) -> int:
    port = max(used, default=0) + 1
    if 1024 < port < 65536 and check_port_free(host, port, udp=udp) is None:
        return port
    return pick_free_ports(host, 1, udp=udp, avoid=used)[0]


def _hostfile_entries(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


def _append_entry(path: Path, host: str, port: int) -> None:
    with path.open("a") as f:
        f.write(f"{host}:{port}\n")


def write_hostfile(path: Path, host: str, ports: Sequence[int]) -> None:
    path.write_text("".join(f"{host}:{p}\n" for p in ports))


# ---- creating a cluster -------------------------------------------------------------------


def plan_cluster(
    directory: Path,
    name: str,
    n: int,
    *,
    base_port: int = 8080,
    runtime_base_port: int = 9413,
    config: str = "",
    host: str = "127.0.0.1",
    viz: bool = True,
) -> ClusterRecord:
    """Check the ports, prepare ``directory`` (hostfile, fresh logs) and return the record.

    A base port of 0 picks free ports. Nothing is started; ClusterError names the node whose
    port is taken.
    """
    if n < 1:
        raise BadInput(f"-n {n}: a cluster needs at least one node")
    for label, base in (("--base-port", base_port), ("--runtime-base-port", runtime_base_port)):
        if base < 0 or (base and base + n - 1 > 65535):
            raise BadInput(f"{label} {base}: ports {base}..{base + n - 1} are not all valid")
    if config and not Path(config).is_file():
        raise BadInput(f"--config {config}: no such file")
    if runtime_base_port:
        rt_ports = [runtime_base_port + i for i in range(n)]
    else:
        rt_ports = pick_free_ports(host, n, udp=True)
    if not viz:
        viz_ports = [-1] * n
    elif base_port:
        viz_ports = [base_port + i for i in range(n)]
    else:
        viz_ports = pick_free_ports(host, n, udp=False, avoid=rt_ports)
    clash = set(rt_ports) & set(viz_ports)
    if clash:
        raise BadInput(
            f"dashboard and runtime ports overlap at {min(clash)}; choose other base ports"
        )
    for i in range(n):
        why = check_port_free(host, rt_ports[i], udp=True)
        if why:
            raise ClusterError(f"node {i}: runtime port taken: {why}")
        if viz_ports[i] > 0 and (why := check_port_free(host, viz_ports[i], udp=False)):
            raise ClusterError(f"node {i}: dashboard port taken: {why}")
    directory.mkdir(parents=True, exist_ok=True)
    for old in [*directory.glob("node-*.log"), *directory.glob("node-*.events")]:
        old.unlink()
    hostfile = directory / "hostfile"
    write_hostfile(hostfile, host, rt_ports)
    nodes = tuple(
        NodeRecord(
            node_id=i,
            pid=0,
            runtime_port=rt_ports[i],
            dashboard_port=viz_ports[i],
            dashboard="",
            log=str(directory / f"node-{i}.log"),
            events=str(directory / f"node-{i}.events"),
            state="starting",
        )
        for i in range(n)
    )
    return ClusterRecord(
        name=name,
        directory=str(directory),
        hostfile=str(hostfile),
        config=str(Path(config).resolve()) if config else "",
        host=host,
        created=time.time(),
        nodes=nodes,
    )


async def launch(
    cluster: LocalCluster,
    *,
    wait: bool = True,
    timeout: float = 120.0,
    progress: Progress | None = None,
    on_spawned: Callable[[ClusterRecord], None] | None = None,
) -> float | None:
    """Start every node of ``cluster.record``; wait until ready (and converged unless
    ``wait=False``). Seconds from the first spawn to convergence, or None without waiting.

    On any failure every process started here is ended before the error propagates.
    """
    t0 = time.monotonic()
    deadline = t0 + timeout
    try:
        # Node 0 first: once it answers, every other node finds a live seed on its first
        # join attempt, instead of waiting for a push/pull to repair a failed join.
        first, *rest = cluster.record.nodes
        cluster.spawn(first)
        if on_spawned is not None:
            on_spawned(cluster.record)
        await cluster.wait_ready(first.node_id, timeout)
        cluster.spawn_many(rest)
        if on_spawned is not None:
            on_spawned(cluster.record)
        for rec in list(cluster.record.nodes):
            await cluster.wait_ready(rec.node_id, max(1.0, deadline - time.monotonic()))
            if progress is not None:
                ready = sum(n.state == "running" for n in cluster.record.nodes)
                progress(ready, 0, len(cluster.record.nodes), time.monotonic() - t0)
        if not wait:
            return None
        expect = {n.node_id for n in cluster.record.nodes}
        return await cluster.wait_converged(expect, timeout, progress, started=t0)
    except BaseException:
        with trio.CancelScope(shield=True), contextlib.suppress(ClusterError):
            await cluster.down(grace=5.0)
        raise
