"""Planning a local cluster: ports, the cluster directory and its hostfile, the node records,
and the command line each node runs.

Rules:
1. Ports are checked before anything starts: a taken one is named with its node
   (``ClusterError``). A base port of 0 picks free ports.
2. A node's id is its line offset in the hostfile. A node added later appends its line; an
   inducted one appends it once it knows its id (``LocalCluster.add``).
3. Nothing here starts, signals or asks a process.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from .ports import check_port_free, pick_free_ports
from .record import BadInput, ClusterError, ClusterRecord, NodeRecord

__all__ = [
    "append_entry",
    "hostfile_entries",
    "node_command",
    "plan_cluster",
    "plan_node",
    "write_hostfile",
]


def node_command(record: ClusterRecord, rec: NodeRecord, *, python: str, viz: bool) -> list[str]:
    """``python -m cluster.node.cli start ...`` for node ``rec`` of ``record`` (the node's
    arguments start at index 3); ``viz=False`` starts it without a dashboard."""
    cmd = [
        python,
        "-m",
        "cluster.node.cli",
        "start",
        "--host",
        record.host,
        "--port",
        str(rec.runtime_port),
        "--hostfile",
        record.hostfile,
        "--events",
        rec.events,
        "--log-file",
        rec.log,
        "--data-dir",
        str(Path(rec.log).parent / f"node-{rec.node_id}-data"),
    ]
    if viz and rec.dashboard_port >= 0:
        cmd += ["--viz-port", str(rec.dashboard_port)]
    else:
        cmd += ["--no-viz"]
    if record.config:
        cmd += ["--config", record.config]
    if rec.induct:
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
        _node_record(directory, i, rt_ports[i], viz_ports[i], induct=False) for i in range(n)
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


def plan_node(record: ClusterRecord, *, induct: bool, viz: bool) -> NodeRecord:
    """The record of one more node of ``record``: the next id, free ports next to the used
    ones. Unless ``induct``, its hostfile line is appended now (ClusterError when the
    hostfile's lines do not end just before that id)."""
    host = record.host
    used_rt = {n.runtime_port for n in record.nodes}
    used_viz = {n.dashboard_port for n in record.nodes}
    rt_port = _next_port(host, used_rt, udp=True)
    viz_port = _next_port(host, used_viz | used_rt | {rt_port}, udp=False) if viz else -1
    next_id = max((n.node_id for n in record.nodes), default=-1) + 1
    hostfile = Path(record.hostfile)
    if not induct:
        entries = hostfile_entries(hostfile)
        if len(entries) != next_id:
            raise ClusterError(
                f"the hostfile {hostfile} has {len(entries)} entries but the next node id is "
                f"{next_id}; add this node with --induct"
            )
        append_entry(hostfile, host, rt_port)
    return _node_record(Path(record.directory), next_id, rt_port, viz_port, induct=induct)


def _node_record(
    directory: Path, node_id: int, rt_port: int, viz_port: int, *, induct: bool
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
    path.write_text("".join(f"{host}:{p}\n" for p in ports))
