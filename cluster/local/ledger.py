"""The processes of a local cluster: every node process its watcher recorded in
``<dir>/procs/`` (the ``cluster.node.zygote`` protocol), together with the nodes and Serf
agents of ``cluster.json``; which of them still run, and how each one that ended, ended.

Rules:
1. A cluster's processes are the union of its record's nodes and its process files, each
   known by pid and start marker (``record.process_state``), never by name. A process file is
   written before its node runs, so whoever started the node may have died without leaving
   the pid anywhere else: ``down`` and ``status`` read both.
2. A process file is forgotten only once its process has ended and its watcher has recorded
   how (or is gone); its ending is folded into the node's record first when the record names
   that process.
3. Nothing here signals a process.
4. A Serf agent has no watcher and no process file: it is known from ``cluster.json`` alone
   (recorded as soon as its spawn returns), and how it ended is guessed from its log, unless
   the record says rt_cluster killed it (state ``killed``): then it ended by SIGKILL.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from .record import AgentRecord, ClusterRecord, Ending, NodeRecord, process_state

__all__ = [
    "LIVE_STATES",
    "Member",
    "fold_endings",
    "forget",
    "guessed_ending",
    "live_members",
    "members",
    "procs_dir",
]

log = logging.getLogger(__name__)
R = TypeVar("R", NodeRecord, AgentRecord)
LIVE_STATES = ("running", "paused", "starting")  # recorded states of a process believed alive


@dataclass(frozen=True, slots=True)
class Member:
    """One process of a cluster: pid, start marker (clock ticks since boot) and node id (-1
    when unknown; a Serf agent's member index, with its name in ``agent``); from its process
    file (``path``) or only from ``cluster.json``."""

    pid: int
    started: int
    node_id: int
    log: str = ""
    argv: tuple[str, ...] = ()
    ending: Ending | None = None  # as its watcher recorded it
    watcher: int = 0
    watcher_started: int = 0
    path: str = ""  # the process file; "" for a process known only from cluster.json
    agent: str = ""  # the name of a Serf agent (rule 4); "" for a node

    @property
    def key(self) -> tuple[int, int]:
        return (self.pid, self.started)

    def label(self) -> str:
        if self.agent:
            return f"agent {self.agent} pid {self.pid}"
        who = f"node {self.node_id}" if self.node_id >= 0 else "a node"
        return f"{who} pid {self.pid}"


def procs_dir(directory: str | Path) -> Path:
    """Where the watchers of a cluster's nodes record them (``<dir>/procs``)."""
    return Path(directory) / "procs"


def _member(path: Path) -> Member | None:
    try:
        doc = json.loads(path.read_text())
        tag = doc.get("tag") or {}
        node_id = tag.get("node_id", -1)
        exit_ = doc.get("exit")
        return Member(
            pid=int(doc["pid"]),
            started=int(doc["started"]),
            node_id=node_id if isinstance(node_id, int) else -1,
            log=str(doc.get("log") or ""),
            argv=tuple(str(a) for a in doc.get("argv") or ()),
            ending=Ending.from_json(exit_) if isinstance(exit_, dict) else None,
            watcher=int(doc.get("watcher") or 0),
            watcher_started=int(doc.get("watcher_started") or 0),
            path=str(path),
        )
    except FileNotFoundError:  # forgotten meanwhile
        return None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        log.warning("unreadable process file %s: %s", path, exc)
        return None


def members(directory: str | Path, record: ClusterRecord | None = None) -> list[Member]:
    """Every process the cluster in ``directory`` knows of: its process files, then the
    record's nodes that no file names and its agents (each once, by pid and start marker)."""
    found: dict[tuple[int, int], Member] = {}
    for path in sorted(procs_dir(directory).glob("*.json")):
        m = _member(path)
        if m is not None:
            found.setdefault(m.key, m)
    for n in record.nodes if record is not None else ():
        if n.pid > 0 and (n.pid, n.started) not in found:
            found[(n.pid, n.started)] = Member(n.pid, n.started, n.node_id, n.log)
    for a in record.agents if record is not None else ():
        if a.pid > 0:
            found.setdefault(
                (a.pid, a.started), Member(a.pid, a.started, a.index, a.log, agent=a.name)
            )
    return list(found.values())


def live_members(directory: str | Path, record: ClusterRecord | None = None) -> list[Member]:
    """The processes of the cluster in ``directory`` that still run (or are paused)."""
    return [m for m in members(directory, record) if process_state(m.pid, m.started) != "gone"]


def guessed_ending(log_path: str) -> Ending:
    """The ending of a process nobody saw end: only the last line of its log is known."""
    try:
        lines = Path(log_path).read_text(errors="replace").splitlines()
    except OSError:
        lines = []
    own = [x.strip() for x in lines if x.strip() and not x.startswith("--- rt_cluster:")]
    return Ending(last_line=own[-1][:300] if own else "", known=False)


def _settled(m: Member) -> Ending | None:
    """The ending of a member that has ended and whose end is recorded (or never will be)."""
    if process_state(m.pid, m.started) != "gone":
        return None
    if m.ending is not None:
        return m.ending
    if m.watcher and process_state(m.watcher, m.watcher_started) != "gone":
        return None  # its watcher is about to record how it ended
    return guessed_ending(m.log)


def _node_now(n: R, ending: Ending | None, gone_state: str) -> R:
    now = process_state(n.pid, n.started) if n.pid > 0 else "gone"
    if now == "gone":
        if n.state in LIVE_STATES and n.pid > 0:
            n = replace(n, state=gone_state)
        if n.ended is None and ending is not None:
            n = replace(n, ended=ending)
    elif now == "paused" and n.state != "paused":
        n = replace(n, state="paused")
    elif now == "running" and n.state not in ("running", "starting"):
        n = replace(n, state="running")
    return n


def _agent_now(a: AgentRecord, gone_state: str) -> AgentRecord:
    """An agent's record matched to its process; its ending read from its log once gone. An
    agent has no watcher, but one that ``kill`` ended is recorded ``killed``: rt_cluster sent
    the SIGKILL itself, so that is its cause (as a node's watcher would have recorded)."""
    gone = a.pid > 0 and a.ended is None and process_state(a.pid, a.started) == "gone"
    if not gone:
        return _node_now(a, None, gone_state)
    ending = guessed_ending(a.log)
    if a.state == "killed":
        ending = replace(ending, signal="SIGKILL", known=True)
    return _node_now(a, ending, gone_state)


def fold_endings(
    record: ClusterRecord, found: Sequence[Member], *, gone_state: str = "exited"
) -> tuple[ClusterRecord, list[Member]]:
    """``record`` with each node's state matched to its process (one that is gone and was
    believed alive becomes ``gone_state``) and its ending filled in; and the members whose
    process files can now be forgotten."""
    endings: dict[tuple[int, int], Ending] = {}
    done: list[Member] = []
    pending: set[tuple[int, int]] = set()
    for m in found:
        ending = _settled(m)
        if ending is None:
            pending.add(m.key)
        else:
            endings[m.key] = ending
            if m.path:
                done.append(m)
    nodes = []
    for n in record.nodes:
        key = (n.pid, n.started)
        ending = endings.get(key)
        if ending is None and key not in pending and n.pid and process_state(*key) == "gone":
            ending = guessed_ending(n.log)  # ended without a watcher that saw it
        nodes.append(_node_now(n, ending, gone_state))
    agents = tuple(_agent_now(a, gone_state) for a in record.agents)
    return replace(record, nodes=tuple(nodes), agents=agents), done


def forget(done: Iterable[Member]) -> None:
    """Remove the process files of members whose end is folded into the record."""
    for m in done:
        try:
            Path(m.path).unlink()
        except FileNotFoundError:
            pass
