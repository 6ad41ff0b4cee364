"""Where the nodes of a local cluster live: on this host's loopback (``Loopback``) or each in a
network namespace of its own on a bridge (``Namespaces``, ``rt_cluster up --netns``). The two
modes answer one interface, ``NodeNetwork``, chosen once from the record (``network_of``).

Rules:
1. ``network_of`` is the one place outside the network modules (``netplan``, ``netns``, this
   one) that asks a record which mode it is in; the launcher, the planner and the bookkeeping
   ask the network they were given and never test ``record.network`` or ``NodeRecord.netns``.
2. A network makes and removes only what is its own: ``Loopback`` makes nothing; both remove
   what a crashed ``up`` of the same directory left behind (``netns.leftovers``), so ``down``
   cleans a cluster whatever its record says.
3. Namespaces: nothing is sent to a node unless the bridge exists (``require``, before every
   RPC); each node is forked by a zygote started inside its namespace, the next
   ``ZYGOTES_AHEAD`` warming up meanwhile; a partition is real (routes in the namespaces,
   ``netns.cut``) and replaces any earlier one, while loss and delay stay in the processes.
   A one-way cut is a real route in the sending node's namespace only (``netns.cut_one_way``).
4. Loopback: one zygote forks every node; a partition is each node's own fault injection
   (``block``), a one-way cut the sending node's (``cut``: each node of FROM drops what it
   sends to TO, and refuses a push/pull either way, ``swim.driver`` rule 3), and a node that
   is gone is skipped with a note.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator, Sequence
from pathlib import Path
from typing import Protocol

from . import netns, netplan
from .forks import AheadForks, Forking, Forks
from .holders import port_trouble
from .ledger import procs_dir
from .ports import next_free_port
from .processes import Processes, Zygote, child_env
from .record import ClusterError, ClusterRecord, Network, NodeRecord

__all__ = ["ZYGOTES_AHEAD", "Loopback", "Namespaces", "NodeNetwork", "Spawner", "network_of"]

ZYGOTES_AHEAD = 4  # zygotes warming up at once when each node needs its own (namespaces)
Block = Callable[[int, list[int]], Awaitable[str | None]]  # node id, peers -> a note or None


class Spawner(Forking, Protocol):
    """What a network asks of the cluster it starts processes for (``TrackedCluster``)."""

    python: str
    processes: Processes

    @property
    def directory(self) -> Path: ...

    @property
    def record(self) -> ClusterRecord: ...

    def open_zygote(self) -> contextlib.AbstractContextManager[Zygote]: ...

    def fork(self, zygote: Zygote, node_id: int) -> NodeRecord: ...


class NodeNetwork(Protocol):
    """The questions the launcher asks of where its nodes live (rule 1)."""

    def require(self) -> None:
        """ClusterError when nothing may be sent to the nodes now."""

    def dashboard_args(self, record: ClusterRecord, rec: NodeRecord) -> list[str]:
        """What a node's command line needs besides its dashboard port, for the host to reach
        its dashboard."""

    def place(
        self, record: ClusterRecord, used: tuple[set[int], set[int]], *, viz: bool
    ) -> tuple[str, str, int, int]:
        """One more node's address, namespace ("" for the host's), runtime and dashboard port
        (-1 without ``viz``), given the ports ``used`` (runtime, dashboard)."""

    def port_trouble(self, host: str, port: int) -> str | None:
        """What holds a node's runtime port, when this host's ports are its ports."""

    def make(self, nodes: Sequence[NodeRecord]) -> None:
        """What the nodes of the record need before they start (once until ``remove``)."""

    def add(self, rec: NodeRecord) -> None:
        """What one more node needs before it starts."""

    def open_forks(self, cluster: Spawner) -> contextlib.AbstractContextManager[Forks]:
        """The forks of a launch for the ``with`` block; on leaving, every fork is recorded."""

    def spawn(self, cluster: Spawner, node_id: int) -> NodeRecord:
        """Start the process of one node."""

    async def partition(
        self, record: ClusterRecord, groups: Sequence[Sequence[int]], block: Block
    ) -> list[str]:
        """Cut the paths between ``groups`` of ``record``'s nodes; notes about nodes skipped."""

    async def cut(
        self, record: ClusterRecord, src: Sequence[int], dst: Sequence[int], block: Block
    ) -> list[str]:
        """Cut one way: every node of ``src`` sends nothing to the nodes of ``dst``
        (``block(node, peers)`` is the node's own ``cut`` fault); notes about nodes skipped."""

    def heal(self, record: ClusterRecord) -> None:
        """Restore every path this network cut (the nodes' own faults are the launcher's)."""

    def remove(self) -> None:
        """Remove what this network made, and what a crash left of it (rule 2)."""


def network_of(record: ClusterRecord) -> NodeNetwork:
    """The network of ``record``'s nodes (rule 1)."""
    if record.network is None:
        return Loopback(record)
    return Namespaces(record, record.network)


def _remove_leftovers(key: str, name: str) -> None:
    if netns.leftovers(key):
        netns.require_privileges(f"removing the network of cluster {name!r}")
        netns.remove_network(key)


class Loopback:
    """Every node on this host's loopback (rule 4)."""

    def __init__(self, record: ClusterRecord) -> None:
        self._name = record.name
        self._key = netplan.network_key(record.directory)

    def require(self) -> None:
        pass

    def dashboard_args(self, record: ClusterRecord, rec: NodeRecord) -> list[str]:
        return []

    def place(
        self, record: ClusterRecord, used: tuple[set[int], set[int]], *, viz: bool
    ) -> tuple[str, str, int, int]:
        used_rt, used_viz = used
        rt_port = next_free_port(record.host, used_rt, udp=True)
        viz_port = -1
        if viz:
            viz_port = next_free_port(record.host, used_viz | used_rt | {rt_port}, udp=False)
        return record.host, "", rt_port, viz_port

    def port_trouble(self, host: str, port: int) -> str | None:
        return port_trouble(host, port)

    def make(self, nodes: Sequence[NodeRecord]) -> None:
        pass

    def add(self, rec: NodeRecord) -> None:
        pass

    @contextlib.contextmanager
    def open_forks(self, cluster: Spawner) -> Iterator[Forks]:
        with cluster.open_zygote() as z, contextlib.closing(AheadForks(cluster, z)) as forks:
            yield forks

    def spawn(self, cluster: Spawner, node_id: int) -> NodeRecord:
        with cluster.open_zygote() as zygote:
            return cluster.fork(zygote, node_id)

    async def partition(
        self, record: ClusterRecord, groups: Sequence[Sequence[int]], block: Block
    ) -> list[str]:
        notes = []
        for g, members in enumerate(groups):
            others = [i for h, grp in enumerate(groups) if h != g for i in grp]
            for nid in members:
                note = await block(nid, others)
                if note is not None:
                    notes.append(note)
        return notes

    async def cut(
        self, record: ClusterRecord, src: Sequence[int], dst: Sequence[int], block: Block
    ) -> list[str]:
        notes = []
        for nid in src:
            note = await block(nid, [i for i in dst if i != nid])
            if note is not None:
                notes.append(note)
        return notes

    def heal(self, record: ClusterRecord) -> None:
        pass

    def remove(self) -> None:
        _remove_leftovers(self._key, self._name)  # a crashed ``up --netns`` here (rule 2)


class Namespaces:
    """Each node in a network namespace of its own, on the cluster's bridge (rule 3)."""

    def __init__(self, record: ClusterRecord, network: Network) -> None:
        self._record = record  # its name and directory; the nodes are asked of the caller's
        self._network = network
        self._made = False  # once until ``remove``: made early to hold a chosen subnet, kept

    def require(self) -> None:
        netns.require_bridge(self._record)

    def dashboard_args(self, record: ClusterRecord, rec: NodeRecord) -> list[str]:
        return ["--viz-bind", record.host_of(rec)]  # reached from the host through the bridge

    def place(
        self, record: ClusterRecord, used: tuple[set[int], set[int]], *, viz: bool
    ) -> tuple[str, str, int, int]:
        host, namespace = netplan.next_place(record, self._network)
        # a namespace of its own: only its two ports must differ
        used_rt, used_viz = used
        rt_port = max(used_rt) + 1
        viz_port = max(used_viz) + 1 if viz else -1
        viz_port += viz_port == rt_port
        if max(rt_port, viz_port) > 65535:
            raise ClusterError("no port is left above the cluster's highest one")
        return host, namespace, rt_port, viz_port

    def port_trouble(self, host: str, port: int) -> str | None:
        return None  # every port of a fresh namespace is free

    def make(self, nodes: Sequence[NodeRecord]) -> None:
        if not self._made:
            netns.make_network(self._record.directory, self._network, nodes)
            self._made = True

    def add(self, rec: NodeRecord) -> None:
        self.require()
        netns.make_node(self._network, rec)

    @contextlib.contextmanager
    def _zygote_in(self, cluster: Spawner, rec: NodeRecord) -> Iterator[Zygote]:
        """A zygote whose forks run inside the namespace of ``rec``."""
        procs_dir(cluster.directory).mkdir(parents=True, exist_ok=True)
        argv = netplan.enter_argv(rec.netns, [cluster.python, "-m", "cluster.node.zygote"])
        errors = cluster.directory / "zygote.log"
        with cluster.processes.open_zygote(argv, child_env(), errors) as zygote:
            yield zygote

    @contextlib.contextmanager
    def open_forks(self, cluster: Spawner) -> Iterator[Forks]:
        order = [n.node_id for n in cluster.record.nodes]
        warm: dict[int, tuple[contextlib.ExitStack, Zygote]] = {}

        def fork(rec: NodeRecord) -> NodeRecord:
            at = order.index(rec.node_id) if rec.node_id in order else len(order)
            for nid in [rec.node_id, *order[at + 1 : at + ZYGOTES_AHEAD]]:
                if nid not in warm:
                    stack = contextlib.ExitStack()
                    zygote = stack.enter_context(self._zygote_in(cluster, cluster.record.node(nid)))
                    warm[nid] = (stack, zygote)
            stack, zygote = warm.pop(rec.node_id)
            with stack:
                return cluster.fork(zygote, rec.node_id)

        try:
            yield Forks(fork)
        finally:
            for stack, _ in warm.values():
                stack.close()

    def spawn(self, cluster: Spawner, node_id: int) -> NodeRecord:
        with self._zygote_in(cluster, cluster.record.node(node_id)) as zygote:
            return cluster.fork(zygote, node_id)

    async def partition(
        self, record: ClusterRecord, groups: Sequence[Sequence[int]], block: Block
    ) -> list[str]:
        self.require()
        for nid, away in netplan.cut_plan(record, groups).items():
            netns.cut(record.node(nid), away)
        return []

    async def cut(
        self, record: ClusterRecord, src: Sequence[int], dst: Sequence[int], block: Block
    ) -> list[str]:
        self.require()
        away = [record.host_of(record.node(i)) for i in dst]
        for nid in src:
            node = record.node(nid)
            netns.cut_one_way(node, [a for a in away if a != record.host_of(node)])
        return []

    def heal(self, record: ClusterRecord) -> None:
        self.require()
        for rec in record.nodes:
            netns.restore(rec)

    def remove(self) -> None:
        self._made = False
        _remove_leftovers(self._network.key, self._record.name)
