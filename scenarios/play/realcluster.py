"""The ``Backend`` of real processes: ``open_cluster(mode="real")`` and ``mode="netns"``, one
OS process per node on this host (in netns, each in a network namespace of its own), a scenario
file's throwaway cluster (``real``), and an ``rt_cluster up`` cluster a scenario is played on
(``attach``, through ``over``).

Rules:
1. A throwaway local cluster (``cluster.local``) in its own directory, every port free-picked,
   the workload off; the swim settings that differ from the defaults go to the nodes' config
   file (a scenario file's run gives its own ``settings`` sections instead). ``start``
   returns once every node lists every node alive, and ends every process it started if it
   cannot get there.
2. The clock, views, events and faults are every process backend's (``processes``).
3. ``aclose`` ends every process of the cluster (SIGTERM, SIGKILL after ``GRACE`` s), waits
   until each is gone (``ClusterError`` names a survivor), and checks the cluster directory's
   process ledger holds no live process: proof, not hope.
4. A last resort for what no ``aclose`` ended: every cluster directory is registered before
   its first process starts and forgotten once proved empty (``leftovers``). A cluster this
   backend was handed (``over``) is not its own: ``aclose`` leaves its processes running.
5. In netns mode (root) each node has an address of its own on a bridge of the cluster's
   (``rt_cluster up --netns``), the ports are the defaults, and a partition is real (routes);
   the subnet is the first /24 of 10.77.0.0/16 no other cluster of the host uses, chosen and
   its bridge made under the host's lock (``netns.choosing_subnet``), so pytest-xdist workers
   never clash.
6. With ``serf`` agents (real mode only) the nodes speak memberlist and the agents follow
   them as members N..N+M-1 (``cluster.local.mixed``), as ``processes`` rule 3 says.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Mapping
from dataclasses import fields
from pathlib import Path
from typing import Any

import httpx
import yaml

from cluster.local import (
    AgentRecord,
    ClusterError,
    ClusterRecord,
    LocalCluster,
    MixedCluster,
    launch,
    live_members,
    member_name,
    netns,
    open_local,
    plan_cluster,
    save_record,
)
from swim import SwimConfig

from . import agents, leftovers
from .processes import ProcessBackend, new_client

__all__ = ["GRACE", "RealBackend", "changed_settings"]

GRACE = 5.0  # seconds a node gets to leave gracefully at the end before SIGKILL
ATTEMPTS = 3  # starts tried when another process takes a port between its pick and its bind
Settings = Mapping[str, Any]  # the nodes' configuration file, by section


def _plan(
    n: int,
    settings: Settings,
    directory: Path,
    name: str | None,
    subnet: str = "",
    serf: int = 0,
) -> ClusterRecord:
    """Rule 1: the nodes' config file and the cluster's record, on ports free now (in
    ``subnet``: each node in a namespace of its own, at its own address)."""
    directory.mkdir(parents=True, exist_ok=True)
    node_yaml = directory / "node.yaml"
    node_yaml.write_text(yaml.safe_dump(dict(settings), sort_keys=False) if settings else "{}\n")
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
    n: int, settings: Settings, directory: Path, name: str | None, namespaces: bool, serf: int
) -> LocalCluster:
    """The cluster to launch, registered (rule 4); in namespaces its network is made here,
    under the host's lock on choosing subnets, so no other cluster takes its subnet (rule 5)."""
    if not namespaces:
        cluster = open_local(_plan(n, settings, directory, name, serf=serf))
        leftovers.register(cluster.directory)
        return cluster
    with netns.choosing_subnet() as subnet:
        cluster = LocalCluster(_plan(n, settings, directory, name, subnet))
        leftovers.register(cluster.directory)
        try:
            cluster.create()
            cluster.make_network()
        except BaseException:
            netns.remove_network(netns.network_key(cluster.directory))
            leftovers.forget(cluster.directory)
            raise
    return cluster


def changed_settings(config: SwimConfig) -> dict[str, Any]:
    """The fields of ``config`` that differ from ``SwimConfig()``: the nodes' ``swim:``."""
    default = SwimConfig()
    return {
        f.name: getattr(config, f.name)
        for f in fields(config)
        if getattr(config, f.name) != getattr(default, f.name)
    }


class RealBackend(ProcessBackend):
    """Node processes of one local cluster (see the module docstring)."""

    def __init__(
        self,
        cluster: LocalCluster,
        client: httpx.AsyncClient,
        launched: float,
        t0: float,
        *,
        owned: bool = True,
    ) -> None:
        self.cluster = cluster
        self.owned = owned  # rule 4
        self.directory = cluster.directory
        self.mode = "real" if cluster.record.network is None else "netns"
        numbers = agents.member_numbers(cluster.record)
        super().__init__(cluster, client, launched, t0, cluster.record.agents, numbers)

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
        settings: Settings | None = None,
    ) -> RealBackend:
        """``n`` node processes under ``directory`` (default a fresh temporary one), converged
        (rule 1); ``ClusterError`` (everything ended) when they do not get there. A start
        that lost a port it picked to another process is tried again (``ATTEMPTS`` in all).
        ``namespaces``: each node in a network namespace of its own, on a subnet no other
        cluster of this host uses (rule 5); ``settings``: the nodes' configuration sections
        (default: the workload off, ``config``'s changed fields)."""
        directory = directory or Path(tempfile.mkdtemp(prefix="rtsim-cluster-"))
        if settings is None:
            settings = {"workload": {"enabled": False}, "swim": changed_settings(config)}
        if namespaces:
            netns.require_privileges("mode 'netns'")
        for attempt in range(1, ATTEMPTS + 1):
            launched = time.monotonic()
            cluster = _planned(n, settings, directory, name, namespaces, serf)
            try:
                await launch(cluster, wait=True, timeout=60.0 + 2.0 * n, on_spawned=save_record)
            except BaseException as exc:
                if not live_members(cluster.directory, cluster.reload()):
                    leftovers.forget(cluster.directory)  # launch ended what it started
                if not isinstance(exc, ClusterError) or "port" not in str(exc):
                    raise
                if attempt == ATTEMPTS:
                    raise
                continue
            return cls(cluster, new_client(), launched, time.monotonic())
        raise AssertionError("unreachable: the last attempt returns or raises")

    @classmethod
    def over(cls, cluster: LocalCluster) -> RealBackend:
        """A running cluster this backend did not start (rule 4), from now on."""
        return cls(cluster, new_client(), 0.0, time.monotonic(), owned=False)

    # ---- where a node is (``processes``) ----------------------------------------------------

    def _ids(self) -> list[int]:
        return [rec.node_id for rec in self.cluster.record.nodes]

    def _running(self, i: int) -> bool:
        return self.cluster.state_of(i) == "running"

    def _url(self, i: int) -> str:
        return self.cluster.record.node(i).dashboard

    async def _topology(self, i: int, timeout: float) -> dict[str, Any] | None:
        return await self.cluster.topology(i, timeout)

    async def _fault(self, i: int, kind: str, value: float) -> None:
        await self.cluster.faults(i, kind, value=value)

    async def restart(self, i: int) -> None:
        agent = self.cluster.record.member(i)
        if isinstance(agent, AgentRecord) and isinstance(self.cluster, MixedCluster):
            await self.cluster.agent_restart(i)
            self.looks.forget(i)  # its view starts anew (``agents`` rule 4)
        else:
            await self.cluster.restart(i)
        self._back(i)

    async def add(self, induct: bool = False) -> int:
        rec = await self.cluster.add(induct=induct)
        if self.agents:  # the new node's name, so views name it by its number
            self.numbers[member_name(rec)] = rec.node_id
        self._back(rec.node_id)
        return rec.node_id

    async def aclose(self) -> None:
        """Rule 3: every process ended and proved gone (a cluster of its own, rule 4); the
        HTTP client closed."""
        if not self.owned:
            await self.client.aclose()
            return
        try:
            try:
                await self.cluster.down(grace=GRACE)
            finally:
                save_record(self.cluster.record)
                await self.client.aclose()
        finally:
            left = live_members(self.cluster.directory, self.cluster.reload())
            if not left:
                leftovers.forget(self.cluster.directory)
            if left:
                raise ClusterError(
                    "processes outlived the cluster: " + ", ".join(m.label() for m in left)
                )
