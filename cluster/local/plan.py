"""Planning a local cluster: ports, the cluster directory with its hostfile and gossip
keyring, the node records, and the command line each node runs.

Rules:
1. Ports are checked before anything starts: a taken one is named with its node and with the
   process that holds it (``ClusterError``). A base port of 0 picks free ports.
2. A directory whose earlier processes still run is refused (they would lose their logs).
3. A node's id is its line offset in the hostfile. A node added later appends its line; an
   inducted one appends it once it knows its id (``LocalCluster.add``).
4. Gossip is keyed by default (``KEYRING_BY_DEFAULT``): ``<dir>/keyring``, mode 0600, one
   base64 line of 32 random bytes, handed to every node as ``--keyring``.
5. Nothing here starts, signals or asks a process.
6. With a subnet (``up --netns``) each node gets its own address and namespace (``netns``):
   node i is ``subnet + i + 1`` in ``rtn<key>-<i+1>``, on the same ports as without (every
   port of a fresh namespace is free, so none is checked on this host), and binds its runtime
   port and dashboard there. The privileges and the subnet are checked before anything is
   written.
7. With Serf agents (``serf``, rule 5 of ``record``) member i of N+M takes the ports member i
   would take in a cluster of N+M nodes: an agent gossips on ``runtime-base-port + i`` and
   answers its RPC on ``base-port + i`` (where a node serves its dashboard; free ones with 0,
   as for nodes). The nodes then speak memberlist and take their id, name and joins on the
   command line instead of a hostfile line (``--wire memberlist``). Not with a subnet.
8. A cluster that would not fit in the memory available is refused before anything is
   written (``capacity``).
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from .capacity import check_fits
from .holders import port_trouble
from .ledger import live_members, procs_dir
from .netns import (
    max_slot,
    namespace_name,
    node_address,
    plan_network,
    require_privileges,
    slot_of,
)
from .ports import check_port_free, pick_free_ports
from .record import BadInput, ClusterError, ClusterRecord, Network, NodeRecord, read_record
from .serf import AGENT_CONFIG, agent_record, serf_binary, write_agent_config

__all__ = [
    "KEYRING_BY_DEFAULT",
    "MAX_NODES",
    "append_entry",
    "hostfile_entries",
    "node_command",
    "plan_cluster",
    "plan_node",
    "write_entries",
    "write_hostfile",
    "write_keyring",
]

# Whether clusters get a gossip keyring unless asked not to (``up --no-keyring``). It needs an
# rt_run that accepts --keyring (issue 12); set it False to launch nodes that do not.
KEYRING_BY_DEFAULT = True
MAX_NODES = 1024  # nodes in one local cluster
DEFAULT_RUNTIME_PORT, DEFAULT_VIZ_PORT = 9413, 8080  # base ports when 0 asks for free ones


def node_command(
    record: ClusterRecord,
    rec: NodeRecord,
    *,
    python: str,
    viz: bool,
    joins: Sequence[str] = (),
) -> list[str]:
    """``python -m cluster.node.cli start ...`` for node ``rec`` of ``record`` (the node's
    arguments start at index 3); ``viz=False`` starts it without a dashboard. A node of a
    mixed cluster (rule 7) joins through ``joins`` (``host:port``) rather than a hostfile."""
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
        if rec.netns:  # reachable from the host through the bridge (rule 6)
            cmd += ["--viz-bind", record.host_of(rec)]
    else:
        cmd += ["--no-viz"]
    if record.config:
        cmd += ["--config", record.config]
    if record.keyring:
        cmd += ["--keyring", record.keyring]
    if rec.induct and not record.wire:
        cmd += ["--induct"]
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
        _check_config(config)
    rt_ports, doors = _pick_ports(host, n, serf, (base_port, runtime_base_port), viz)
    _refuse_earlier_run(directory, name)
    for i in range(total):
        what = ("node", "runtime", "dashboard") if i < n else ("agent", "gossip", "RPC")
        _check_port(i, what[1], host, rt_ports[i], udp=True, who=what[0])
        if doors[i] > 0:
            _check_port(i, what[2], host, doors[i], udp=False, who=what[0])
    nodes = tuple(
        _node_record(directory, i, rt_ports[i], doors[i], induct=False, host=host) for i in range(n)
    )
    agents = tuple(agent_record(directory, i, rt_ports[i], doors[i], host) for i in range(n, total))
    record = _prepare(directory, name, nodes, config, keyring, host=host)
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
        _check_config(config)
    network = plan_network(directory, subnet, n)
    _refuse_earlier_run(directory, name)
    nodes = []
    for i in range(n):
        address, ns = node_address(network, i + 1), namespace_name(network, i + 1)
        viz_port = base_port + i if viz else -1
        nodes.append(
            _node_record(
                directory, i, runtime_base_port + i, viz_port, induct=False, host=address, netns=ns
            )
        )
    return _prepare(directory, name, tuple(nodes), config, keyring, network=network)


def _prepare(
    directory: Path,
    name: str,
    nodes: tuple[NodeRecord, ...],
    config: str,
    keyring: bool | None,
    *,
    host: str = "127.0.0.1",
    network: Network | None = None,
) -> ClusterRecord:
    """The directory made ready for ``nodes`` (fresh logs, hostfile, keyring); the record."""
    directory.mkdir(parents=True, exist_ok=True)
    old_files = [*directory.glob("node-*.log"), *directory.glob("node-*.events")]
    old_files += [*directory.glob("serf-*.log"), *directory.glob(AGENT_CONFIG)]
    for old in [*old_files, *procs_dir(directory).glob("*.json")]:
        old.unlink()
    hostfile = directory / "hostfile"
    write_entries(hostfile, [(n.host, n.runtime_port) for n in nodes])
    use_keyring = KEYRING_BY_DEFAULT if keyring is None else keyring
    if use_keyring:
        write_keyring(directory / "keyring")
    return ClusterRecord(
        name=name,
        directory=str(directory),
        hostfile=str(hostfile),
        config=str(Path(config).resolve()) if config else "",
        host=host,
        created=time.time(),
        nodes=nodes,
        keyring=str(directory / "keyring") if use_keyring else "",
        network=network,
    )


def _check_config(config: str) -> None:
    shown = config if len(config) <= 80 else config[:77] + "..."
    try:
        if not Path(config).is_file():
            raise BadInput(f"--config {shown!r}: no such file")
        with open(config, "rb"):
            pass
    except OSError as exc:
        raise BadInput(f"--config {shown!r}: cannot be read ({exc.strerror})") from None


def _refuse_earlier_run(directory: Path, name: str) -> None:
    try:
        earlier = read_record(directory)
    except ClusterError:
        earlier = None
    running = live_members(directory, earlier)
    if running:
        raise ClusterError(
            f"cluster {name!r} is already running ({len(running)} processes, e.g. "
            f"{running[0].label()}); stop it first with: rt_cluster down --name {name}"
        )


def _check_port(
    node_id: int, what: str, host: str, port: int, *, udp: bool, who: str = "node"
) -> None:
    trouble = port_trouble(host, port, udp=udp)
    if trouble is not None:
        taken = "taken" if "in use" in trouble else "unavailable"
        raise ClusterError(f"{who} {node_id}: {what} port {taken}: {trouble}")


def write_keyring(path: Path) -> None:
    """A fresh gossip keyring at ``path``: one base64 line of 32 random bytes, mode 0600,
    written whole, then renamed (a reader never sees part of a key)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, base64.b64encode(secrets.token_bytes(32)) + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)


def plan_node(record: ClusterRecord, *, induct: bool, viz: bool) -> NodeRecord:
    """The record of one more node of ``record``: the next id, free ports next to the used
    ones. Unless ``induct``, its hostfile line is appended now (ClusterError when the
    hostfile's lines do not end just before that id). In a cluster with a network (rule 6)
    it takes the next address and namespace, and the ports after the highest. In a mixed
    cluster (rule 7) it takes the number after every member's and needs no hostfile line."""
    host, netns = record.host, ""
    used_rt = {n.runtime_port for n in record.nodes} | {a.gossip_port for a in record.agents}
    used_viz = {n.dashboard_port for n in record.nodes}
    used_viz |= {int(a.rpc_addr.rpartition(":")[2]) for a in record.agents}
    if record.network is not None:
        host, netns = _next_address(record, record.network)
        # a namespace of its own: only its two ports must differ
        rt_port = max(used_rt) + 1
        viz_port = max(used_viz) + 1 if viz else -1
        viz_port += viz_port == rt_port
        if max(rt_port, viz_port) > 65535:
            raise ClusterError("no port is left above the cluster's highest one")
    else:
        rt_port = _next_port(host, used_rt, udp=True)
        viz_port = _next_port(host, used_viz | used_rt | {rt_port}, udp=False) if viz else -1
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


def _next_address(record: ClusterRecord, network: Network) -> tuple[str, str]:
    """The address and namespace of one more node: the slot after the highest taken."""
    slots = [slot_of(network, n.host) for n in record.nodes if n.host]
    slot = max(slots, default=0) + 1
    if slot > max_slot(network):
        raise ClusterError(f"the subnet {network.subnet} has no address left for a node")
    return node_address(network, slot), namespace_name(network, slot)


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


def _next_port(host: str, used: set[int], *, udp: bool) -> int:
    """The port after the highest used one when it is free, else any free port."""
    port = max(used, default=0) + 1
    if 1024 < port < 65536 and check_port_free(host, port, udp=udp) is None:
        return port
    return pick_free_ports(host, 1, udp=udp, avoid=used)[0]


def hostfile_entries(path: Path) -> list[str]:
    """The hostfile's entries (comments and blank lines left out); [] when it is unreadable."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return []
    return [s for s in (line.split("#", 1)[0].strip() for line in lines) if s]


def append_entry(path: Path, host: str, port: int) -> None:
    with path.open("a") as f:
        f.write(f"{host}:{port}\n")


def write_hostfile(path: Path, host: str, ports: Sequence[int]) -> None:
    write_entries(path, [(host, p) for p in ports])


def write_entries(path: Path, entries: Sequence[tuple[str, int]]) -> None:
    """A hostfile of ``host:port`` lines, in order (line offset = node id)."""
    path.write_text("".join(f"{host}:{port}\n" for host, port in entries))
