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
"""

from __future__ import annotations

import base64
import os
import secrets
import time
from collections.abc import Sequence
from pathlib import Path

from .holders import port_trouble
from .ledger import live_members, procs_dir
from .ports import check_port_free, pick_free_ports
from .record import BadInput, ClusterError, ClusterRecord, NodeRecord, read_record

__all__ = [
    "KEYRING_BY_DEFAULT",
    "MAX_NODES",
    "append_entry",
    "hostfile_entries",
    "node_command",
    "plan_cluster",
    "plan_node",
    "write_hostfile",
    "write_keyring",
]

# Whether clusters get a gossip keyring unless asked not to (``up --no-keyring``). It needs an
# rt_run that accepts --keyring (issue 12); set it False to launch nodes that do not.
KEYRING_BY_DEFAULT = True
MAX_NODES = 1024  # nodes in one local cluster


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
    if record.keyring:
        cmd += ["--keyring", record.keyring]
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
    keyring: bool | None = None,
) -> ClusterRecord:
    """Check the ports, prepare ``directory`` (hostfile, fresh logs, the gossip keyring unless
    ``keyring`` is False; None means ``KEYRING_BY_DEFAULT``) and return the record.

    A base port of 0 picks free ports. Nothing is started; ClusterError names the node whose
    port is taken and the process holding it.
    """
    if not 1 <= n <= MAX_NODES:
        raise BadInput(f"-n {n}: a cluster has 1 to {MAX_NODES} nodes")
    for label, base in (("--base-port", base_port), ("--runtime-base-port", runtime_base_port)):
        if base < 0 or (base and base + n - 1 > 65535):
            raise BadInput(f"{label} {base}: ports {base}..{base + n - 1} are not all valid")
    if config:
        _check_config(config)
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
    _refuse_earlier_run(directory, name)
    for i in range(n):
        _check_port(i, "runtime", host, rt_ports[i], udp=True)
        if viz_ports[i] > 0:
            _check_port(i, "dashboard", host, viz_ports[i], udp=False)
    directory.mkdir(parents=True, exist_ok=True)
    old_files = [*directory.glob("node-*.log"), *directory.glob("node-*.events")]
    for old in [*old_files, *procs_dir(directory).glob("*.json")]:
        old.unlink()
    hostfile = directory / "hostfile"
    write_hostfile(hostfile, host, rt_ports)
    use_keyring = KEYRING_BY_DEFAULT if keyring is None else keyring
    if use_keyring:
        write_keyring(directory / "keyring")
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
        keyring=str(directory / "keyring") if use_keyring else "",
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


def _check_port(node_id: int, what: str, host: str, port: int, *, udp: bool) -> None:
    trouble = port_trouble(host, port, udp=udp)
    if trouble is not None:
        taken = "taken" if "in use" in trouble else "unavailable"
        raise ClusterError(f"node {node_id}: {what} port {taken}: {trouble}")


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
