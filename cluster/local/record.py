"""The on-disk record of a local cluster: ``<home>/<name>/cluster.json``, hostfile, logs.

Rules:
1. ``<home>`` is ``$RT_CLUSTER_HOME`` when set, else ``~/.rt/clusters``. A cluster's directory
   holds ``cluster.json``, ``hostfile``, ``keyring`` (when gossip is keyed), per node
   ``node-<id>.log`` / ``node-<id>.events``, and ``procs/``: one file per node process, written
   by the process's watcher before the node runs (``ledger``).
2. ``cluster.json`` changes only through ``update_record``: under an exclusive lock on
   ``<dir>/.lock``, re-read, changed, written to a temporary file and renamed. Readers never
   see a half-written record and no writer overwrites another's change with a stale copy.
   ``save_record`` merges: per node, the record of the newest process wins.
4. A cluster whose nodes have addresses of their own (``rt_cluster up --netns``) records its
   network (``Network``: subnet, bridge, the names of its namespaces and links) before any of
   it is made, and each node its address and namespace (``NodeRecord.host``, ``.netns``), so
   ``down`` finds all of it whoever made it and however that ended.
3. A process is known by its pid *and* its start marker: its start time in clock ticks since
   boot (``/proc/<pid>/stat`` field 22). A pid whose start time differs is not ours; a zombie
   counts as gone.
5. A mixed cluster (``rt_cluster up --serf M``) numbers its members 0..N+M-1: rtsim nodes
   first (``nodes``, named ``rt-<id>``), then real Serf agents (``agents``, ``serf-<index>``);
   its nodes speak memberlist (``wire``). One number names one member, node or agent
   (``ClusterRecord.member``).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any

from .endings import Ending
from .pids import legacy_marker, process_state, start_marker

__all__ = [
    "AgentRecord",
    "BadInput",
    "ClusterError",
    "ClusterRecord",
    "Ending",
    "Network",
    "NodeRecord",
    "cluster_dir",
    "clusters_home",
    "load_record",
    "merge_agent",
    "merge_node",
    "process_state",
    "read_record",
    "save_record",
    "start_marker",
    "update_record",
    "valid_name",
]

NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RECORD = "cluster.json"


class ClusterError(Exception):
    """A problem with a local cluster or the user's request; the message is for stderr."""


class BadInput(ClusterError):
    """The user asked for something that does not exist or cannot be (exit status 2)."""


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node of a local cluster and its newest process (ports are TCP+UDP runtime and HTTP
    dashboard; ``pid`` 0 before it started)."""

    node_id: int
    pid: int
    runtime_port: int
    dashboard_port: int
    dashboard: str  # URL, "" when the node serves no dashboard
    log: str
    events: str
    state: str  # starting, running, paused, stopped, killed, exited, failed
    started: int = 0  # start marker: clock ticks since boot (rule 3), 0 when unknown
    induct: bool = False
    ended: Ending | None = None  # how the process ``pid`` ended, once it has
    host: str = ""  # the node's own address; "" means the cluster's (``ClusterRecord.host_of``)
    netns: str = ""  # the network namespace it runs in; "" for the host's
    clock_offset: float = 0.0  # the clock fault it runs under (``rt_cluster clock``), kept
    clock_rate: float = 1.0  # for its restarts

    def to_status(self, state: str | None = None) -> dict[str, Any]:
        """The ``status --json`` shape of this node (``host`` as recorded; ``status`` fills in
        the cluster's for older records)."""
        return {
            "node_id": self.node_id,
            "pid": self.pid,
            "state": state or self.state,
            "host": self.host,
            "runtime_port": self.runtime_port,
            "dashboard": self.dashboard,
            "log": self.log,
            "events": self.events,
            "ended": None if self.ended is None else asdict(self.ended),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> NodeRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        if isinstance(values.get("started"), float):  # an older record: epoch seconds
            values["started"] = legacy_marker(int(values.get("pid", 0)), values["started"])
        if isinstance(values.get("ended"), Mapping):
            values["ended"] = Ending.from_json(values["ended"])
        else:
            values["ended"] = None
        return cls(**values)


@dataclass(frozen=True, slots=True)
class AgentRecord:
    """One Serf agent of a mixed cluster (rule 5) and its newest process (``pid`` 0 before it
    started): its member ``index``, its name, its gossip port (UDP and TCP, at ``host``) and
    RPC address (``serf members -rpc-addr``). It leads a session of its own: ``pgid`` is its
    process group (its pid), where signals go."""

    index: int
    name: str
    pid: int
    gossip_port: int
    rpc_addr: str  # host:port
    log: str
    state: str  # as a node's: starting, running, paused, stopped, killed, exited, failed
    started: int = 0  # start marker (rule 3), 0 when unknown
    pgid: int = 0
    host: str = "127.0.0.1"
    ended: Ending | None = None  # guessed from its log: an agent has no watcher

    @property
    def gossip_addr(self) -> str:
        return f"{self.host}:{self.gossip_port}"

    def to_status(self, state: str | None = None) -> dict[str, Any]:
        """The ``status --json`` shape of this agent."""
        return {
            "index": self.index,
            "kind": "serf",
            "name": self.name,
            "pid": self.pid,
            "pgid": self.pgid,
            "state": state or self.state,
            "host": self.host,
            "gossip_port": self.gossip_port,
            "rpc_addr": self.rpc_addr,
            "log": self.log,
            "ended": None if self.ended is None else asdict(self.ended),
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> AgentRecord:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in d.items() if k in known}
        ended = values.get("ended")
        values["ended"] = Ending.from_json(ended) if isinstance(ended, Mapping) else None
        return cls(**values)


@dataclass(frozen=True, slots=True)
class Network:
    """The network of a cluster whose nodes live in namespaces of their own (rule 4): every
    name in it is derived from ``key`` (``cluster.local.netplan``), so leftovers are found by
    name even when the record lost track of them."""

    subnet: str  # e.g. "10.77.0.0/24"; node addresses are taken from it in order
    key: str  # 6 hex digits from the cluster directory: unique per cluster on this host
    bridge: str  # the host's bridge, <= 15 characters
    gateway: str  # the host's own address on the bridge (the subnet's last usable one)

    def to_status(self) -> dict[str, Any]:
        """The ``status --json`` shape: where the nodes are, and which faults are real."""
        return {
            "subnet": self.subnet,
            "bridge": self.bridge,
            "gateway": self.gateway,
            "real": ["partition", "cut"],
            "simulated": ["loss", "delay", "clock", "disk"],
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Network:
        return cls(**{f.name: str(d.get(f.name) or "") for f in fields(cls)})


@dataclass(frozen=True, slots=True)
class ClusterRecord:
    """A cluster: its name, directory, launch options and nodes (sorted by node id)."""

    name: str
    directory: str
    hostfile: str
    config: str = ""  # the --config file handed to every node, "" for none
    host: str = "127.0.0.1"
    created: float = 0.0
    nodes: tuple[NodeRecord, ...] = field(default_factory=tuple)
    keyring: str = ""  # the gossip keyring file handed to every node, "" for none
    network: Network | None = None  # nodes in namespaces of their own (rule 4); None: on host
    wire: str = ""  # the nodes' gossip: "" rtsim's own, "memberlist" in a mixed cluster (rule 5)
    agents: tuple[AgentRecord, ...] = field(default_factory=tuple)  # sorted by index

    def host_of(self, node: NodeRecord) -> str:
        """The address the node is reached at: its own, else the cluster's."""
        return node.host or self.host

    def node(self, node_id: int) -> NodeRecord:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        known = ", ".join(str(n.node_id) for n in self.nodes) or "none"
        agents = f"; agents: {', '.join(str(a.index) for a in self.agents)}" if self.agents else ""
        raise BadInput(f"cluster {self.name!r} has no node {node_id} (nodes: {known}{agents})")

    def member(self, index: int) -> NodeRecord | AgentRecord:
        """The node or agent numbered ``index`` (rule 5); BadInput naming those there are."""
        for a in self.agents:
            if a.index == index:
                return a
        return self.node(index)

    def with_node(self, rec: NodeRecord) -> ClusterRecord:
        others = [n for n in self.nodes if n.node_id != rec.node_id]
        return replace(self, nodes=tuple(sorted([*others, rec], key=lambda n: n.node_id)))

    def with_agent(self, rec: AgentRecord) -> ClusterRecord:
        others = [a for a in self.agents if a.index != rec.index]
        return replace(self, agents=tuple(sorted([*others, rec], key=lambda a: a.index)))

    def to_json(self) -> dict[str, Any]:
        """The record as JSON values: ``asdict``'s answer, without its deep copies (a record
        of 1,000 nodes is written at every fork; ``asdict`` took 0.3 s of it)."""
        return _plain(self)

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClusterRecord:
        known = {f.name for f in fields(cls)}
        nodes = tuple(NodeRecord.from_json(n) for n in d.get("nodes", ()))
        agents = tuple(AgentRecord.from_json(a) for a in d.get("agents", ()))
        net = d.get("network")
        network = Network.from_json(net) if isinstance(net, Mapping) else None
        values = {k: v for k, v in d.items() if k in known}
        return cls(**{**values, "nodes": nodes, "agents": agents, "network": network})


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def _plain(obj: Any) -> dict[str, Any]:
    """A record dataclass as ``asdict`` makes it: each field, the dataclasses in it (one, or
    a tuple of them) as dicts of their own, tuples of values as lists."""
    kind = type(obj)
    names = _FIELD_NAMES.get(kind)
    if names is None:
        names = _FIELD_NAMES[kind] = tuple(f.name for f in fields(obj))
    out: dict[str, Any] = {}
    for name in names:
        v = getattr(obj, name)
        if isinstance(v, tuple):
            v = [_plain(x) if is_dataclass(x) else x for x in v]
        elif is_dataclass(v):
            v = _plain(v)
        out[name] = v
    return out


def _dumps(doc: Mapping[str, Any]) -> str:
    """The record file's text: one key a line, one node (or agent) a line, each by the C
    encoder (``json.dumps(indent=...)`` is the slow pure-Python one)."""
    lines = []
    for key, value in doc.items():
        if isinstance(value, list) and value:
            inner = ",\n".join(f"    {json.dumps(x)}" for x in value)
            lines.append(f"  {json.dumps(key)}: [\n{inner}\n  ]")
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def clusters_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("RT_CLUSTER_HOME", "")
    return Path(os.path.expanduser(raw)) if raw else Path.home() / ".rt" / "clusters"


def valid_name(name: str) -> str:
    if not NAME_RE.fullmatch(name):
        raise BadInput(
            f"bad cluster name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return name


def cluster_dir(name: str, env: Mapping[str, str] | None = None) -> Path:
    return clusters_home(env) / valid_name(name)


# ---- reading and writing ----------------------------------------------------------------------


def read_record(directory: str | Path) -> ClusterRecord | None:
    """The record in ``directory``; None when there is none; ClusterError when unreadable."""
    path = Path(directory) / RECORD
    try:
        return ClusterRecord.from_json(json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        raise ClusterError(f"{path}: unreadable cluster record: {exc}") from None


def load_record(name: str, env: Mapping[str, str] | None = None) -> ClusterRecord:
    """The record of cluster ``name``; ClusterError when there is none or it is unreadable."""
    directory = cluster_dir(name, env)
    rec = read_record(directory)
    if rec is None:
        raise BadInput(
            f"no cluster named {name!r} (no {directory / RECORD}); start one with: "
            f"rt_cluster up -n 3 --name {name}"
        )
    return rec


@contextlib.contextmanager
def _locked(directory: Path) -> Iterator[None]:
    fd = os.open(directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and with it the lock


def update_record(
    directory: str | Path, change: Callable[[ClusterRecord | None], ClusterRecord]
) -> ClusterRecord:
    """Apply ``change`` to the record in ``directory`` (None when there is none yet) under the
    directory's lock and write the result atomically; the record written."""
    directory = Path(directory)
    with _locked(directory):
        new = change(read_record(directory))
        tmp = directory / f".{RECORD}.tmp"
        tmp.write_text(_dumps(new.to_json()))
        os.replace(tmp, directory / RECORD)
    return new


def _newer(ours: NodeRecord | AgentRecord, theirs: NodeRecord | AgentRecord) -> bool:
    """Whether ``ours`` describes the same or a newer process of the member than ``theirs``."""
    if theirs.pid == 0:
        return True
    if ours.pid == 0:
        return False
    return ours.started >= theirs.started  # ticks since boot only grow


def merge_node(rec: ClusterRecord, node: NodeRecord) -> ClusterRecord:
    """``rec`` with ``node``, unless ``rec`` names a newer process of that node."""
    for n in rec.nodes:
        if n.node_id == node.node_id and not _newer(node, n):
            return rec
    return rec.with_node(node)


def merge_agent(rec: ClusterRecord, agent: AgentRecord) -> ClusterRecord:
    """``rec`` with ``agent``, unless ``rec`` names a newer process of that agent."""
    for a in rec.agents:
        if a.index == agent.index and not _newer(agent, a):
            return rec
    return rec.with_agent(agent)


def save_record(rec: ClusterRecord) -> ClusterRecord:
    """Merge ``rec`` into its directory's record: per node (and agent) the newest process wins
    (a stale copy never hides a process started since); members only on disk are kept. The
    record now on disk."""

    def merge(disk: ClusterRecord | None) -> ClusterRecord:
        merged = replace(rec, nodes=disk.nodes if disk else (), agents=disk.agents if disk else ())
        for n in rec.nodes:
            merged = merge_node(merged, n)
        for a in rec.agents:
            merged = merge_agent(merged, a)
        return merged

    return update_record(rec.directory, merge)
