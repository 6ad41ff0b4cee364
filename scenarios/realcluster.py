"""The ``Backend`` of ``open_cluster(mode="real")`` and ``mode="netns"``: one OS process per
node on this host (in netns, each in a network namespace of its own).

Rules:
1. A throwaway local cluster (``cluster.local``) in its own directory, every port free-picked,
   the workload off; the swim settings that differ from the defaults go to the nodes' config
   file. ``start`` returns once every node lists every node alive, and ends every process it
   started if it cannot get there.
2. The trace clock is ``time.monotonic()``, the clock the nodes stamp their events with; an
   action is stamped before it takes effect (``chaos`` rule 3).
3. Views are each node's topology over its RPC (1 s each, all at once; a paused or dead node
   answers nothing). Events are read over ``GET /api/events`` when asked for, and from a
   node just before a kill, pause or restart takes it away, so none is lost.
4. ``aclose`` ends every process of the cluster (SIGTERM, SIGKILL after ``GRACE`` s), waits
   until each is gone (``ClusterError`` names a survivor), and checks the cluster directory's
   process ledger holds no live process: proof, not hope.
5. A last resort for what no ``aclose`` ended (Ctrl-C at the wrong moment, a crashed test
   process): every cluster directory is registered before its first process starts and
   forgotten once proved empty; at interpreter exit (``atexit``) ``end_leftovers`` SIGKILLs
   the live processes of every directory still registered, each checked by pid and start
   marker, never by name, then removes their namespaces.
6. In netns mode (root) each node has an address of its own on a bridge of the cluster's
   (``rt_cluster up --netns``), the ports are the defaults, and a partition is real (routes);
   the subnet is the first /24 of 10.77.0.0/16 no other cluster of the host uses, chosen and
   its bridge made under the host's lock (``netns.choosing_subnet``), so pytest-xdist workers
   never clash.
7. With ``serf`` agents (real mode only) the nodes speak memberlist and the agents follow
   them as members N..N+M-1 (``cluster.local.mixed``); views and events name every member by
   its number (``scenarios.agents``); an agent has no events, no dashboard and no fault
   injection (``loss`` and ``delay`` refuse it).
"""

from __future__ import annotations

import atexit
import signal
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any

import httpx
import trio
import yaml

from cluster.local import (
    AgentRecord,
    ClusterError,
    ClusterRecord,
    LocalCluster,
    Member,
    MixedCluster,
    Processes,
    launch,
    live_members,
    netns,
    open_local,
    plan_cluster,
    read_record,
    save_record,
)
from swim import SwimConfig

from . import agents
from .collect import REQUEST_TIMEOUT, EventCollector

__all__ = [
    "GRACE",
    "RealBackend",
    "changed_settings",
    "end_leftovers",
    "kill_leftovers_now",
    "registered",
]

GRACE = 5.0  # seconds a node gets to leave gracefully at the end before SIGKILL
ASK_TIMEOUT = 1.0  # seconds one node gets to answer for its view
ATTEMPTS = 3  # starts tried when another process takes a port between its pick and its bind
_REGISTERED: set[Path] = set()  # rule 5: cluster directories not yet proved empty


def _plan(
    n: int, config: SwimConfig, directory: Path, name: str | None, subnet: str = "", serf: int = 0
) -> ClusterRecord:
    """Rule 1: the nodes' config file and the cluster's record, on ports free now (in
    ``subnet``: each node in a namespace of its own, at its own address)."""
    directory.mkdir(parents=True, exist_ok=True)
    settings = {"workload": {"enabled": False}, "swim": changed_settings(config)}
    node_yaml = directory / "node.yaml"
    node_yaml.write_text(yaml.safe_dump(settings, sort_keys=False))
    return plan_cluster(
        directory / "cluster",
        name or directory.name[:64],
        n,
        base_port=0,
        runtime_base_port=0,
        config=str(node_yaml),
        subnet=subnet,
        serf=serf,
    )


def _planned(
    n: int, config: SwimConfig, directory: Path, name: str | None, namespaces: bool, serf: int
) -> LocalCluster:
    """The cluster to launch, registered (rule 5); in namespaces its network is made here,
    under the host's lock on choosing subnets, so no other cluster takes its subnet (rule 6)."""
    if not namespaces:
        cluster = open_local(_plan(n, config, directory, name, serf=serf))
        _REGISTERED.add(cluster.directory)
        return cluster
    with netns.choosing_subnet() as subnet:
        cluster = LocalCluster(_plan(n, config, directory, name, subnet))
        _REGISTERED.add(cluster.directory)
        try:
            cluster.create()
            cluster.make_network()
        except BaseException:
            netns.remove_network(netns.network_key(cluster.directory))
            _REGISTERED.discard(cluster.directory)
            raise
    return cluster


def registered() -> list[Path]:
    """The cluster directories whose processes are not yet proved gone (rule 5)."""
    return sorted(_REGISTERED)


def _leftovers() -> list[Member]:
    running: list[Member] = []
    for directory in sorted(_REGISTERED):
        try:
            record = read_record(directory)
        except ClusterError:
            record = None
        running += live_members(directory, record)
    return running


def kill_leftovers_now() -> list[int]:
    """Rule 5 without waiting (safe in a signal handler, inside trio or not): SIGKILL to the
    process group of every live process of every registered cluster; their pids. The
    namespaces stay: ``end_leftovers`` (at exit) removes them, or else the next
    ``rt_cluster down`` of that directory does."""
    running = _leftovers()
    procs = Processes()
    for m in running:
        procs.signal(m, signal.SIGKILL)
    return [m.pid for m in running]


def _remove_networks() -> None:
    """Rule 5: the namespaces, veth pairs and bridge of every registered cluster."""
    for directory in sorted(_REGISTERED):
        key = netns.network_key(directory)
        if netns.leftovers(key):
            try:
                netns.remove_network(key)
            except ClusterError as exc:
                print(f"rtsim: the network of {directory} stays: {exc}", file=sys.stderr)


def end_leftovers() -> list[int]:
    """Rule 5: SIGKILL every live process of every registered cluster directory and wait
    until each is gone; their pids. Safe to call at any time outside trio."""
    running = _leftovers()
    if running:
        trio.run(_kill_all, running)
    _remove_networks()
    _REGISTERED.clear()
    return [m.pid for m in running]


async def _kill_all(running: list[Member]) -> None:
    await Processes().terminate(running, hard=True, name=Member.label)


atexit.register(end_leftovers)


def changed_settings(config: SwimConfig) -> dict[str, Any]:
    """The fields of ``config`` that differ from ``SwimConfig()``: the nodes' ``swim:``."""
    default = SwimConfig()
    return {
        f.name: getattr(config, f.name)
        for f in fields(config)
        if getattr(config, f.name) != getattr(default, f.name)
    }


class RealBackend:
    """Node processes of one throwaway local cluster (see the module docstring)."""

    def __init__(
        self, cluster: LocalCluster, client: httpx.AsyncClient, launched: float, t0: float
    ) -> None:
        self.cluster = cluster
        self.client = client
        self.collector = EventCollector(client)  # no nursery: read when asked (rule 3)
        self.launched = launched
        self.t0 = t0
        self.directory: Path | None = cluster.directory
        self.mode = "real" if cluster.record.network is None else "netns"
        self.agents = {a.index: a for a in cluster.record.agents}  # rule 7
        self.numbers = agents.member_numbers(cluster.record)
        for rec in cluster.record.nodes:
            self.collector.follow(rec.node_id, rec.dashboard)

    @classmethod
    async def start(
        cls,
        n: int,
        config: SwimConfig,
        *,
        directory: Path | None,
        name: str | None,
        namespaces: bool = False,
        serf: int = 0,
    ) -> RealBackend:
        """``n`` node processes under ``directory`` (default a fresh temporary one), converged
        (rule 1); ``ClusterError`` (everything ended) when they do not get there. A start
        that lost a port it picked to another process is tried again (``ATTEMPTS`` in all).
        ``namespaces``: each node in a network namespace of its own, on a subnet no other
        cluster of this host uses (rule 6)."""
        directory = directory or Path(tempfile.mkdtemp(prefix="rtsim-cluster-"))
        if namespaces:
            netns.require_privileges("mode 'netns'")
        for attempt in range(1, ATTEMPTS + 1):
            launched = time.monotonic()
            cluster = _planned(n, config, directory, name, namespaces, serf)
            try:
                await launch(cluster, wait=True, timeout=60.0 + 2.0 * n, on_spawned=save_record)
            except BaseException as exc:
                if not live_members(cluster.directory, cluster.reload()):
                    _REGISTERED.discard(cluster.directory)  # launch ended what it started
                if not isinstance(exc, ClusterError) or "port" not in str(exc):
                    raise
                if attempt == ATTEMPTS:
                    raise
                continue
            client = httpx.AsyncClient(timeout=httpx.Timeout(REQUEST_TIMEOUT), trust_env=False)
            return cls(cluster, client, launched, time.monotonic())
        raise AssertionError("unreachable: the last attempt returns or raises")

    def now(self) -> float:
        return time.monotonic()

    async def advance(self, seconds: float) -> None:
        await trio.sleep(max(0.0, seconds))

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        out: dict[int, dict[int, str] | None] = dict.fromkeys(observers)
        ids = {rec.node_id for rec in self.cluster.record.nodes}

        async def ask(i: int) -> None:
            if i in self.agents:
                out[i] = await agents.agent_view(self.agents[i], self.numbers)
                return
            body = await self.cluster.topology(i, ASK_TIMEOUT)
            if body is not None and self.agents:
                out[i] = agents.node_view(body, self.numbers)
            elif body is not None:
                out[i] = {
                    int(m["node_id"]): str(m["view"])
                    for m in body.get("nodes", ())
                    if isinstance(m, dict) and "view" in m
                }

        async with trio.open_nursery() as nursery:
            for i in observers:
                if (i in ids or i in self.agents) and self.cluster.state_of(i) == "running":
                    nursery.start_soon(ask, i)
        return out

    async def events(self) -> list[dict[str, Any]]:
        await self.collector.finish()
        return agents.renumber_events(self.collector.events(), list(self.agents.values()))

    async def prepare(self, kind: str, i: int) -> None:
        """Read node ``i``'s events before it goes away; then leave it alone (rule 3)."""
        if i in self.agents:
            return
        if self.cluster.state_of(i) == "running":
            await self.collector.catch_up(i)
        self.collector.rest(i)

    def _back(self, i: int) -> None:
        if i not in self.agents:
            self.collector.follow(i, self.cluster.record.node(i).dashboard)

    async def kill(self, i: int) -> None:
        await self.cluster.kill(i)

    async def pause(self, i: int) -> None:
        self.cluster.pause(i)
        await trio.lowlevel.checkpoint()

    async def resume(self, i: int) -> None:
        self.cluster.resume(i)
        self._back(i)
        await trio.lowlevel.checkpoint()

    async def restart(self, i: int) -> None:
        agent = self.cluster.record.member(i)
        if isinstance(agent, AgentRecord) and isinstance(self.cluster, MixedCluster):
            await self.cluster.agent_restart(i)
        else:
            await self.cluster.restart(i)
        self._back(i)

    async def add(self) -> int:
        rec = await self.cluster.add()
        self._back(rec.node_id)
        return rec.node_id

    async def partition(self, groups: Sequence[Sequence[int]]) -> None:
        await self.cluster.partition(groups)

    async def heal(self) -> None:
        await self.cluster.heal()

    async def loss(self, percent: float, nodes: Sequence[int]) -> None:
        self._no_agents(nodes, "loss")
        for i in nodes:
            await self.cluster.faults(i, "loss", value=percent)

    async def delay(self, ms: float, nodes: Sequence[int]) -> None:
        self._no_agents(nodes, "delay")
        for i in nodes:
            await self.cluster.faults(i, "delay", value=ms)

    def _no_agents(self, members: Sequence[int], what: str) -> None:
        """Rule 7: a Serf agent has no fault injection of its own."""
        named = [self.agents[i].name for i in members if i in self.agents]
        if named:
            raise ValueError(f"{what}: {', '.join(named)} are Serf agents, without fault injection")

    def dashboard_url(self, i: int) -> str | None:
        if i in self.agents:
            return None
        return self.cluster.record.node(i).dashboard or None

    async def aclose(self) -> None:
        """Rule 4: every process ended and proved gone; the HTTP client closed."""
        try:
            try:
                await self.cluster.down(grace=GRACE)
            finally:
                save_record(self.cluster.record)
                await self.client.aclose()
        finally:
            left = live_members(self.cluster.directory, self.cluster.reload())
            if not left:
                _REGISTERED.discard(self.cluster.directory)
            if left:
                raise ClusterError(
                    "processes outlived the cluster: " + ", ".join(m.label() for m in left)
                )
