"""A cluster someone else started, named by its hostfile: reached over the node RPC, and its
processes signalled only where they run on this machine.

Rules:
1. Node ids are hostfile offsets (``host:port`` runtime entries, ``cluster.hosts.parse_hostfile``).
   Whether an entry is on this machine is decided from the file alone (``on_this_machine``:
   a loopback address, or one of this machine's interface addresses, names resolved), so a
   caller can refuse what it cannot do before any packet is sent to any node.
2. ``identify`` asks every node its ``Identity`` over the RPC (all at once, each bounded):
   the node must answer as its offset; its pid, dashboard URL and, on this machine, the pid's
   start marker are kept, so a reused pid is never signalled. A pid counts as the node's only
   when that process listens on the node's runtime port here.
3. Faults (``Faults`` frames) work on every node wherever it runs (one-way cuts, clocks and
   disks too: each the node's own fault injection). Signals (kill, pause,
   resume; stop escalates to them) go to a node's pid alone, never to its process group: the
   process is the user's, and its group may be the user's shell job. A node on another host,
   or whose pid is no process here, is refused with ``ClusterError``.
4. Nothing is started and nothing is torn down: the cluster stays the user's.

Errors: ``BadInput`` for a hostfile that cannot be read; ``ClusterError`` for everything else
the user should read (a node that does not answer, answers as another node, runs elsewhere).
"""

from __future__ import annotations

import ipaddress
import os
import signal
import socket
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import psutil
import trio

from cluster.ground.errors import ApiError, SettingsError
from cluster.hosts import interface_addresses, parse_hostfile
from cluster.rpc import Call, Identity, Monitor, PeerTimeout, Stop, rpc_call

from .faultrequests import check_clock, check_cut, fault_request
from .netns import stranded_addresses
from .record import BadInput, ClusterError, ClusterRecord, process_state, read_record, start_marker

__all__ = [
    "AttachedCluster",
    "AttachedNode",
    "managing_record",
    "on_this_machine",
    "read_hostfile",
]

RPC_TIMEOUT = 2.0  # seconds for one control call
STOP_GRACE = 10.0  # seconds a stopped node gets to leave before SIGTERM, then SIGKILL
GONE_WAIT = 10.0  # seconds a signalled process gets to vanish
POLL = 0.05
MAX_AT_ONCE = 64  # identity calls in flight at once


@dataclass(frozen=True, slots=True)
class AttachedNode:
    """One hostfile entry and, once identified, its process: ``pid`` and ``started`` (start
    marker; 0 when the node is on another host) and ``dashboard`` ("" when it serves none)."""

    node_id: int
    host: str
    port: int
    local: bool  # on this machine (rule 1)
    pid: int = 0
    started: int = 0
    dashboard: str = ""

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def on_this_machine(host: str, addresses: Collection[str] | None = None) -> bool:
    """Whether ``host`` (an address or a name) is this machine: loopback, or every address it
    resolves to is one of this machine's interface addresses. A name that does not resolve is
    not this machine. No packet goes to ``host`` (a name costs a resolver lookup)."""
    mine = interface_addresses() if addresses is None else addresses
    try:
        candidates = [ipaddress.ip_address(host.strip("[]"))]
    except ValueError:
        try:
            infos = socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return False
        candidates = [ipaddress.ip_address(str(i[4][0]).split("%", 1)[0]) for i in infos]
    return bool(candidates) and all(ip.is_loopback or str(ip) in mine for ip in candidates)


def _listens(pid: int, port: int) -> bool:
    """Whether process ``pid`` of this machine listens on TCP ``port``: proof that the pid a
    node names is that node here, not a process of another pid namespace."""
    try:
        proc = psutil.Process(pid)
        conns = getattr(proc, "net_connections", None) or proc.connections
        return any(
            c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
            for c in conns(kind="tcp")
        )
    except (psutil.Error, OSError):
        return False


def read_hostfile(path: str | Path) -> tuple[AttachedNode, ...]:
    """The hostfile's entries as nodes (id = offset), each marked on this machine or not;
    ``BadInput`` naming the file when it cannot be used."""
    try:
        entries = parse_hostfile(str(path), 0)
    except SettingsError as exc:
        raise BadInput(str(exc)) from None
    if not entries:
        raise BadInput(f"hostfile {path}: no entries")
    mine = interface_addresses()
    local = {host: on_this_machine(host, mine) for host in {h for h, _ in entries}}
    return tuple(AttachedNode(i, host, port, local[host]) for i, (host, port) in enumerate(entries))


def managing_record(path: str | Path, nodes: Sequence[AttachedNode]) -> ClusterRecord | None:
    """The record of the local cluster (``rt_cluster up``) whose hostfile ``path`` is, when its
    nodes are exactly the file's entries and each has a live process here; else None."""
    hostfile = Path(os.path.expanduser(path)).resolve()
    try:
        record = read_record(hostfile.parent)
    except ClusterError:
        return None
    if record is None or Path(os.path.expanduser(record.hostfile)).resolve() != hostfile:
        return None
    by_id = {n.node_id: n for n in record.nodes}
    for node in nodes:
        rec = by_id.get(node.node_id)
        if rec is None or rec.runtime_port != node.port:
            return None
        if process_state(rec.pid, rec.started) == "gone":
            return None
    return record if len(by_id) == len(nodes) else None


class AttachedCluster:
    """The nodes of a hostfile, as found by ``identify``; their faults, and signals to those
    on this machine (rule 3)."""

    def __init__(self, nodes: Sequence[AttachedNode], hostfile: str = "") -> None:
        self.hostfile = hostfile
        self.nodes = {n.node_id: n for n in nodes}
        stranded = stranded_addresses([n.host for n in nodes])
        if stranded:  # netns rule 3: a namespaced cluster's bridge is gone
            raise ClusterError(
                f"hostfile {hostfile} names {', '.join(stranded)}, addresses of a namespaced "
                "cluster whose bridge is gone (only rtsim's unreachable route covers them); "
                "nothing was sent"
            )

    def node(self, node_id: int) -> AttachedNode:
        try:
            return self.nodes[node_id]
        except KeyError:
            known = ", ".join(map(str, sorted(self.nodes)))
            raise BadInput(
                f"hostfile {self.hostfile} has no node {node_id} (nodes: {known})"
            ) from None

    # ---- RPC -----------------------------------------------------------------------------

    async def call(self, node_id: int, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
        """One RPC to a node; ClusterError naming it when it fails."""
        n = self.node(node_id)
        try:
            return await rpc_call(n.host, n.port, request, timeout)
        except PeerTimeout:
            raise ClusterError(
                f"node {node_id} ({n.where}) did not answer within {timeout:g}s"
            ) from None
        except ApiError as exc:
            raise ClusterError(f"node {node_id} ({n.where}): {exc.message}") from None

    async def identify(self, timeout: float = RPC_TIMEOUT) -> None:
        """Rule 2: every node's identity, asked at once; ClusterError naming the first node
        that does not answer, or answers as another node."""
        answers: dict[int, Any] = {}
        errors: list[str] = []
        limiter = trio.CapacityLimiter(MAX_AT_ONCE)

        async def ask(node_id: int) -> None:
            async with limiter:
                try:
                    answers[node_id] = await self.call(node_id, Identity(), timeout)
                except ClusterError as exc:
                    errors.append(str(exc))

        async with trio.open_nursery() as nursery:
            for node_id in self.nodes:
                nursery.start_soon(ask, node_id)
        if errors:
            raise ClusterError(f"{sorted(errors)[0]} (hostfile {self.hostfile})")
        for node_id, body in sorted(answers.items()):
            self.nodes[node_id] = self._identified(self.nodes[node_id], body)

    def _identified(self, n: AttachedNode, body: Any) -> AttachedNode:
        if not isinstance(body, dict) or not isinstance(body.get("pid"), int):
            raise ClusterError(f"node {n.node_id} ({n.where}) answered no identity: {body!r:.80}")
        if body.get("node_id") != n.node_id:
            raise ClusterError(
                f"entry {n.node_id} of {self.hostfile} ({n.where}) answers as node "
                f"{body.get('node_id')!r}: node ids are hostfile offsets"
            )
        pid = body["pid"]
        started = start_marker(pid) if n.local and _listens(pid, n.port) else 0
        return replace(n, pid=pid, started=started, dashboard=str(body.get("dashboard") or ""))

    async def topology(self, node_id: int, timeout: float = 1.0) -> dict[str, Any] | None:
        """The node's topology body, or None when it does not answer."""
        try:
            body = await self.call(node_id, Monitor("topology"), timeout)
        except ClusterError:
            return None
        return body if isinstance(body, dict) else None

    async def faults(self, node_id: int, action: str, **kw: Any) -> Any:
        return await self.call(node_id, fault_request(action, **kw))

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> list[str]:
        """Each node of ``src`` drops what it sends to the nodes of ``dst`` (its own fault
        injection, rule 3)."""
        check_cut(None, src, dst)
        for i in (*src, *dst):
            self.node(i)
        for node_id in src:
            await self.faults(node_id, "cut", peers=list(dst))
        return []

    async def clock(self, i: int, offset: float, rate: float) -> None:
        """The node's clock (rule 3): refused by a node embedded in another program's trio;
        not kept for a restart (the processes are the user's: rule 4)."""
        check_clock(offset, rate)
        await self.faults(i, "clock", offset=float(offset), rate=float(rate))

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        request = {"pool": pool, "latency_ms": latency_ms, "errors": errors, "full": full}
        await self.faults(i, "disk", **request)

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        """Each node blocks every node of the other groups."""
        for g, members in enumerate(groups):
            others = [i for h, grp in enumerate(groups) if h != g for i in grp]
            for node_id in members:
                await self.faults(node_id, "block", peers=others)

    async def heal(self) -> list[str]:
        """Every node drops its faults; a line per node that could not be reached."""
        notes = []
        for node_id in sorted(self.nodes):
            try:
                await self.faults(node_id, "heal")
            except ClusterError as exc:
                notes.append(str(exc))
        return notes

    # ---- processes on this machine (rule 3) ------------------------------------------------

    def signalable(self, node_id: int) -> AttachedNode:
        """The node, if a signal can reach its process; ClusterError saying why not."""
        n = self.node(node_id)
        if not n.local:
            raise ClusterError(f"node {node_id} runs on another host ({n.where}): no signal")
        if not n.pid or not n.started:
            raise ClusterError(
                f"node {node_id} ({n.where}) says it is pid {n.pid}, but no process of this "
                f"machine with that pid listens on port {n.port} (another pid namespace?)"
            )
        return n

    def state_of(self, node_id: int) -> str:
        """``running``, ``paused`` or ``gone`` for a node on this machine; ``unknown`` else."""
        n = self.node(node_id)
        if not n.local or not n.started:
            return "unknown"
        return process_state(n.pid, n.started)

    def _signal(self, n: AttachedNode, sig: signal.Signals) -> bool:
        if process_state(n.pid, n.started) == "gone":
            return False
        try:
            os.kill(n.pid, sig)
        except ProcessLookupError:
            return False
        return True

    async def _wait_gone(self, n: AttachedNode, timeout: float) -> bool:
        with trio.move_on_after(timeout):
            while process_state(n.pid, n.started) != "gone":
                await trio.sleep(POLL)
            return True
        return False

    async def kill(self, node_id: int) -> None:
        n = self.signalable(node_id)
        self._signal(n, signal.SIGKILL)
        if not await self._wait_gone(n, GONE_WAIT):
            raise ClusterError(f"node {node_id} (pid {n.pid}) survived SIGKILL")

    async def stop(self, node_id: int, grace: float = STOP_GRACE) -> None:
        """Ask the node to leave (``Stop``); SIGTERM, then SIGKILL, if it does not end."""
        n = self.signalable(node_id)
        if process_state(n.pid, n.started) == "running":
            try:
                await self.call(node_id, Stop())
            except ClusterError:
                pass  # not answering: the signals below end it
            if await self._wait_gone(n, grace):
                return
        for sig in (signal.SIGCONT, signal.SIGTERM):
            self._signal(n, sig)
        if await self._wait_gone(n, grace):
            return
        await self.kill(node_id)

    def pause(self, node_id: int) -> None:
        n = self.signalable(node_id)
        if not self._signal(n, signal.SIGSTOP):
            raise ClusterError(f"node {node_id} (pid {n.pid}) is not running")

    def resume(self, node_id: int) -> None:
        n = self.signalable(node_id)
        if not self._signal(n, signal.SIGCONT):
            raise ClusterError(f"node {node_id} (pid {n.pid}) is not running")
