"""The on-disk record of a local cluster: ``<home>/<name>/cluster.json``, hostfile, logs.

Rules:
1. ``<home>`` is ``$RT_CLUSTER_HOME`` when set, else ``~/.rt/clusters``. A cluster's directory
   holds ``cluster.json``, ``hostfile`` and per node ``node-<id>.log`` / ``node-<id>.events``.
2. ``cluster.json`` is rewritten atomically (temporary file, then rename); readers never see a
   half-written record.
3. Whether a recorded process still runs is decided from the pid *and* its start time, so a
   reused pid is never mistaken for a node (a zombie counts as gone).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import psutil

__all__ = [
    "BadInput",
    "ClusterError",
    "ClusterRecord",
    "NodeRecord",
    "cluster_dir",
    "clusters_home",
    "load_record",
    "process_state",
    "save_record",
    "valid_name",
]

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class ClusterError(Exception):
    """A problem with a local cluster or the user's request; the message is for stderr."""


class BadInput(ClusterError):
    """The user asked for something that does not exist or cannot be (exit status 2)."""


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One node process of a local cluster (ports are TCP+UDP runtime and HTTP dashboard)."""

    node_id: int
    pid: int
    runtime_port: int
    dashboard_port: int
    dashboard: str  # URL, "" when the node serves no dashboard
    log: str
    events: str
    state: str  # starting, running, paused, stopped, killed, exited, failed
    started: float = 0.0  # process create time (epoch seconds) to tell a reused pid apart
    induct: bool = False

    def to_status(self, state: str | None = None) -> dict[str, Any]:
        """The ``status --json`` shape of this node."""
        return {
            "node_id": self.node_id,
            "pid": self.pid,
            "state": state or self.state,
            "runtime_port": self.runtime_port,
            "dashboard": self.dashboard,
            "log": self.log,
            "events": self.events,
        }


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

    def node(self, node_id: int) -> NodeRecord:
        for n in self.nodes:
            if n.node_id == node_id:
                return n
        known = ", ".join(str(n.node_id) for n in self.nodes) or "none"
        raise BadInput(f"cluster {self.name!r} has no node {node_id} (nodes: {known})")

    def with_node(self, rec: NodeRecord) -> ClusterRecord:
        others = [n for n in self.nodes if n.node_id != rec.node_id]
        return replace(self, nodes=tuple(sorted([*others, rec], key=lambda n: n.node_id)))

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["nodes"] = [asdict(n) for n in self.nodes]
        return d

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> ClusterRecord:
        nodes = tuple(NodeRecord(**n) for n in d.get("nodes", ()))
        return cls(**{**d, "nodes": nodes})


def clusters_home(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    raw = env.get("RT_CLUSTER_HOME", "")
    return Path(raw).expanduser() if raw else Path.home() / ".rt" / "clusters"


def valid_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise BadInput(
            f"bad cluster name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)"
        )
    return name


def cluster_dir(name: str, env: Mapping[str, str] | None = None) -> Path:
    return clusters_home(env) / valid_name(name)


def load_record(name: str, env: Mapping[str, str] | None = None) -> ClusterRecord:
    """The record of cluster ``name``; ClusterError when there is none or it is unreadable."""
    path = cluster_dir(name, env) / "cluster.json"
    try:
        data = json.loads(path.read_text())
        return ClusterRecord.from_json(data)
    except FileNotFoundError:
        raise BadInput(
            f"no cluster named {name!r} (no {path}); start one with: rt_cluster up -n 3 "
            f"--name {name}"
        ) from None
    except (OSError, ValueError, TypeError) as exc:
        raise ClusterError(f"{path}: unreadable cluster record: {exc}") from None


def save_record(rec: ClusterRecord) -> None:
    path = Path(rec.directory) / "cluster.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(rec.to_json(), indent=2) + "\n")
    os.replace(tmp, path)


def process_state(pid: int, started: float) -> str:
    """``running``, ``paused`` (SIGSTOPped) or ``gone`` for a recorded node process."""
    if pid <= 0:
        return "gone"
    try:
        proc = psutil.Process(pid)
        if started and abs(proc.create_time() - started) > 1.0:
            return "gone"  # the pid was reused by another process
        status = proc.status()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return "gone"
    if status in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD):
        return "gone"
    if status in (psutil.STATUS_STOPPED, getattr(psutil, "STATUS_TRACING_STOP", "tracing-stop")):
        return "paused"
    return "running"


def create_time(pid: int) -> float:
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return 0.0
