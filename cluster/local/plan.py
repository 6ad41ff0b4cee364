"""Planning a local cluster: ports, the node records, what the cluster directory gets
(``clusterdir`` writes it: hostfile, gossip keyring), and the command line each node runs.

Rules:
1. Ports are checked before anything starts: a taken one is named with its node and with the
   process that holds it (``ClusterError``). A base port of 0 picks free ports.
2. A directory whose earlier processes still run is refused (``clusterdir`` rule 1).
3. A node's id is its line offset in the hostfile. A node added later appends its line; an
   inducted one appends it once it knows its id (``LocalCluster.add``).
4. Gossip is keyed by default (``KEYRING_BY_DEFAULT``): ``<dir>/keyring``, mode 0600, one
   base64 line of 32 random bytes, handed to every node as ``--keyring``.
5. Nothing here starts, signals or asks a process.
6. With a subnet (``up --netns``) each node gets its own address and namespace (``netplan``):
   node i is ``subnet + i + 1`` in ``rtn<key>-<i+1>``, on the same ports as without (every
   port of a fresh namespace is free, so none is checked on this host), and binds its runtime
   port and dashboard there. The privileges and the subnet are checked before anything is
   written. After ``up``, what differs per mode (one more node's place, a node's extra
   arguments) is asked of the cluster's ``network.NodeNetwork``.
7. With Serf agents (``serf``, rule 5 of ``record``) member i of N+M takes the ports member i
   would take in a cluster of N+M nodes: an agent gossips on ``runtime-base-port + i`` and
   answers its RPC on ``base-port + i`` (where a node serves its dashboard; free ones with 0,
   as for nodes). The nodes then speak memberlist and take their id, name and joins on the
   command line instead of a hostfile line (``--wire memberlist``). Not with a subnet.
8. A cluster that would not fit in the memory available is refused before anything is
   written (``capacity``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .capacity import MAX_NODES, check_fits
from .clusterdir import append_entry, check_config, hostfile_entries, prepare, refuse_earlier_run
from .holders import port_trouble
from .netns import plan_network, require_privileges
from .netplan import node_places
from .network import NodeNetwork
from .ports import pick_free_ports
from .record import BadInput, ClusterError, ClusterRecord, NodeRecord
from .serf import agent_record, serf_binary, write_agent_config

__all__ = ["KEYRING_BY_DEFAULT", "node_command", "plan_cluster", "plan_node"]

# Whether clusters get a gossip keyring unless asked not to (``up --no-keyring``). It needs an
# rt_run that accepts --keyring (issue 12); set it False to launch nodes that do not.
KEYRING_BY_DEFAULT = True
DEFAULT_RUNTIME_PORT, DEFAULT_VIZ_PORT = 9413, 8080  # base ports when 0 asks for free ones


def node_command(
    record: ClusterRecord,
    rec: NodeRecord,
    *,
    python: str,
    viz: bool,
    joins: Sequence[str] = (),
    network: NodeNetwork,
) -> list[str]:
    """``python -m cluster.node.cli start ...`` for node ``rec`` of ``record`` (the node's
    arguments start at index 3); ``viz=False`` starts it without a dashboard. A node of a
    mixed cluster (rule 7) joins through ``joins`` (``host:port``) rather than a hostfile;
    what its ``network`` needs is added (rule 6)."""
    if record.wire:
        where = ["--wire", record.wire, "--name", f"rt-{rec.node_id}"]
        where += ["--node-id", str(rec.node_id), *(a for j in joins for a in ("--join", j))]
    else:
        where = ["--hostfile", record.hostfile]
    cmd = [
        python,
        "-m",
        "cluster.node.cli",
        "start",
        "--host",
        record.host_of(rec),
        "--port",
        str(rec.runtime_port),
        *where,
        "--events",
        rec.events,
        "--log-file",
        rec.log,
        "--data-dir",
        str(Path(rec.log).parent / f"node-{rec.node_id}-data"),
    ]
    if viz and rec.dashboard_port >= 0:
        cmd += ["--viz-port", str(rec.dashboard_port)]
        cmd += network.dashboard_args(record, rec)
    else:
        cmd += ["--no-viz"]
    if record.config:
        cmd += ["--config", record.config]
    if record.keyring:
        cmd += ["--keyring", record.keyring]
    if rec.induct and not record.wire:
        cmd += ["--induct"]
    if (rec.clock_offset, rec.clock_rate) != (0.0, 1.0):  # a clock fault outlives a restart
        cmd += ["--clock-offset", f"{rec.clock_offset:.6f}"]
        cmd += ["--clock-rate", f"{rec.clock_rate:.6f}"]
    return cmd


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
    keyring: bool | None = None,
    subnet: str = "",
    serf: int = 0,
) -> ClusterRecord:
    """Check the ports, prepare ``directory`` (hostfile, fresh logs, the gossip keyring unless
    ``keyring`` is False; None means ``KEYRING_BY_DEFAULT``) and return the record.

    A base port of 0 picks free ports. Nothing is started; ClusterError names the node whose
    port is taken and the process holding it. With ``subnet`` each node gets an address and
    a namespace of its own (rule 6; nothing of the network is made here). ``serf`` Serf
    agents follow the ``n`` nodes (rule 7).
    """
    check_fits(n, serf)
    if subnet:
        if serf:
            raise BadInput(
                "--serf does not go with --netns: the agents run on this host's loopback"
            )
        return _plan_in_namespaces(
            directory, name, n, subnet, (base_port, runtime_base_port), config, viz, keyring
        )
    total = n + serf
    if not 1 <= n <= MAX_NODES:
        raise BadInput(f"-n {n}: a cluster has 1 to {MAX_NODES} nodes")
    if not 0 <= serf <= MAX_NODES - n:
        raise BadInput(f"--serf {serf}: at most {MAX_NODES} members, nodes and agents together")
    for label, base in (("--base-port", base_port), ("--runtime-base-port", runtime_base_port)):
        if base < 0 or (base and base + total - 1 > 65535):
            raise BadInput(f"{label} {base}: ports {base}..{base + total - 1} are not all valid")
    if serf:
        serf_binary()  # on PATH, or refused before anything is written
    if config:
        check_config(config)
    rt_ports, doors = _pick_ports(host, n, serf, (base_port, runtime_base_port), viz)
    refuse_earlier_run(directory, name)
    for i in range(total):
        what = ("node", "runtime", "dashboard") if i < n else ("agent", "gossip", "RPC")
        _check_port(i, what[1], host, rt_ports[i], udp=True, who=what[0])
        if doors[i] > 0:
            _check_port(i, what[2], host, doors[i], udp=False, who=what[0])
    nodes = tuple(
        _node_record(directory, i, rt_ports[i], doors[i], induct=False, host=host) for i in range(n)
    )
    agents = tuple(agent_record(directory, i, rt_ports[i], doors[i], host) for i in range(n, total))
    record = prepare(directory, name, nodes, config, _use_keyring(keyring), host=host)
    if not serf:
        return record
    write_agent_config(directory, record.keyring)
    return replace(record, wire="memberlist", agents=agents)


def _pick_ports(
    host: str, n: int, serf: int, bases: tuple[int, int], viz: bool
) -> tuple[list[int], list[int]]:
    """The runtime (gossip) port of each of the ``n + serf`` members, and its door: a node's
    dashboard port (-1 without ``viz``), an agent's RPC port (rule 7)."""
    base_port, runtime_base_port = bases
    total = n + serf
    if runtime_base_port:
        rt_ports = [runtime_base_port + i for i in range(total)]
    else:
        rt_ports = pick_free_ports(host, total, udp=True)
    if base_port:
        doors = [base_port + i for i in range(total)]
    else:
        free = iter(pick_free_ports(host, total if viz else serf, udp=False, avoid=rt_ports))
        doors = [next(free) if viz or i >= n else -1 for i in range(total)]
    if not viz:
        doors[:n] = [-1] * n
    clash = set(rt_ports) & set(doors)
    if clash:
        raise BadInput(
            f"dashboard and runtime ports overlap at {min(clash)}; choose other base ports"
        )
    return rt_ports, doors


def _plan_in_namespaces(
    directory: Path,
    name: str,
    n: int,
    subnet: str,
    bases: tuple[int, int],
    config: str,
    viz: bool,
    keyring: bool | None,
) -> ClusterRecord:
    """``plan_cluster`` for nodes with addresses and namespaces of their own (rule 6)."""
    require_privileges("--netns")
    if not 1 <= n <= MAX_NODES:
        raise BadInput(f"-n {n}: a cluster has 1 to {MAX_NODES} nodes")
    base_port = bases[0] or DEFAULT_VIZ_PORT
    runtime_base_port = bases[1] or DEFAULT_RUNTIME_PORT
    for label, base in (("--base-port", base_port), ("--runtime-base-port", runtime_base_port)):
        if base + n - 1 > 65535:
            raise BadInput(f"{label} {base}: ports {base}..{base + n - 1} are not all valid")
    if viz and max(base_port, runtime_base_port) < min(base_port, runtime_base_port) + n:
        raise BadInput("dashboard and runtime ports overlap; choose other base ports")
    if config:
        check_config(config)
    network = plan_network(directory, subnet, n)
    refuse_earlier_run(directory, name)
    nodes = []
    for i, (address, ns) in enumerate(node_places(network, n)):
        viz_port = base_port + i if viz else -1
        nodes.append(
            _node_record(
                directory, i, runtime_base_port + i, viz_port, induct=False, host=address, netns=ns
            )
        )
    return prepare(directory, name, tuple(nodes), config, _use_keyring(keyring), network=network)


def _use_keyring(keyring: bool | None) -> bool:
    return KEYRING_BY_DEFAULT if keyring is None else keyring


def _check_port(
    node_id: int, what: str, host: str, port: int, *, udp: bool, who: str = "node"
) -> None:
    trouble = port_trouble(host, port, udp=udp)
    if trouble is not None:
        taken = "taken" if "in use" in trouble else "unavailable"
        raise ClusterError(f"{who} {node_id}: {what} port {taken}: {trouble}")


def plan_node(
    record: ClusterRecord, *, induct: bool, viz: bool, network: NodeNetwork
) -> NodeRecord:
    """The record of one more node of ``record``: the next id, and the address, namespace and
    ports its ``network`` gives it (on the host: free ports next to the used ones; in
    namespaces, rule 6: the next address and namespace, the ports after the highest). Unless
    ``induct``, its hostfile line is appended now (ClusterError when the hostfile's lines do
    not end just before that id). In a mixed cluster (rule 7) it takes the number after
    every member's and needs no hostfile line."""
    used_rt = {n.runtime_port for n in record.nodes} | {a.gossip_port for a in record.agents}
    used_viz = {n.dashboard_port for n in record.nodes}
    used_viz |= {int(a.rpc_addr.rpartition(":")[2]) for a in record.agents}
    host, netns, rt_port, viz_port = network.place(record, (used_rt, used_viz), viz=viz)
    next_id = max((n.node_id for n in record.nodes), default=-1) + 1
    next_id = max([next_id, *(a.index + 1 for a in record.agents)])
    hostfile = Path(record.hostfile)
    if record.wire and induct:
        raise BadInput("--induct: a node of a cluster with Serf agents joins by name, no hostfile")
    if not induct and not record.wire:
        entries = hostfile_entries(hostfile)
        if len(entries) != next_id:
            raise ClusterError(
                f"the hostfile {hostfile} has {len(entries)} entries but the next node id is "
                f"{next_id}; add this node with --induct"
            )
        append_entry(hostfile, host, rt_port)
    return _node_record(
        Path(record.directory), next_id, rt_port, viz_port, induct=induct, host=host, netns=netns
    )


def _node_record(
    directory: Path,
    node_id: int,
    rt_port: int,
    viz_port: int,
    *,
    induct: bool,
    host: str,
    netns: str = "",
) -> NodeRecord:
    return NodeRecord(
        node_id=node_id,
        pid=0,
        runtime_port=rt_port,
        dashboard_port=viz_port,
        dashboard="",
        log=str(directory / f"node-{node_id}.log"),
        events=str(directory / f"node-{node_id}.events"),
        state="starting",
        induct=induct,
        host=host,
        netns=netns,
    )
