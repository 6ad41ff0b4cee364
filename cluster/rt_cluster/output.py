"""What ``rt_cluster`` prints: plain lines, tables, launch progress and the next step.

Rules:
1. Normal output goes to stdout, flushed line by line (it is often piped or watched); problems
   go to stderr as one line prefixed ``rt_cluster:``.
2. A reader that went away (``| head -1``) never stops a command: the stream is pointed at
   /dev/null and the command carries on, so ``up --foreground`` still stops its cluster on
   Ctrl-C.
3. Nothing here changes a cluster or talks to a node: it prints what it is given.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from .hints import id_list

if TYPE_CHECKING:  # the launcher's records, only named here: printing loads no launcher
    from cluster.local import ClusterRecord, LaunchProgress, Member, Progress

__all__ = [
    "err",
    "next_step",
    "out",
    "print_nodes",
    "progress",
    "progress_line",
    "real_and_simulated",
    "status_lines",
    "table",
]


def _write(stream: TextIO, text: str) -> None:
    """Write and flush; a closed reader turns the stream into /dev/null (rule 2)."""
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError:
        null = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(null, stream.fileno())
        finally:
            os.close(null)


def out(line: str = "") -> None:
    """One line on stdout."""
    _write(sys.stdout, line + "\n")


def err(line: str) -> None:
    """One problem line on stderr, prefixed with the command's name."""
    _write(sys.stderr, f"rt_cluster: {line}\n")


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Left-aligned columns two spaces apart, header first; no trailing blanks."""
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells
    )


def progress_line(p: LaunchProgress) -> str:
    """``  12.0s  started 120/250  listening 97/250  converged 0/250``."""
    n = p.total
    return (
        f"  {p.elapsed:5.1f}s  started {p.started}/{n}  listening {p.listening}/{n}  "
        f"converged {p.converged}/{n}"
    )


def progress(quiet: bool) -> Progress:
    """A launch progress callback (``launch`` calls it about once a second): one line
    rewritten in place on a terminal, else a line each time."""
    tty = sys.stdout.isatty()

    def show(p: LaunchProgress) -> None:
        if quiet:
            return
        if tty:
            _write(sys.stdout, "\r" + progress_line(p) + ("\n" if p.done else ""))
        else:
            out(progress_line(p))

    return show


def print_nodes(rec: ClusterRecord) -> None:
    """The table of a cluster's nodes: id, pid, address, ports and log file; with Serf agents,
    one row per member with its kind (an agent's door is its RPC address)."""
    rows: list[Sequence[Any]] = [
        (n.node_id, n.pid, rec.host_of(n), n.runtime_port, n.dashboard or "-", Path(n.log).name)
        for n in rec.nodes
    ]
    if not rec.agents:
        out(table(rows, ("node", "pid", "host", "runtime", "dashboard", "log")))
        return
    rows = [(r[0], "rtsim", f"rt-{r[0]}", *r[1:]) for r in rows]
    rows += [
        (
            a.index,
            "serf",
            a.name,
            a.pid,
            a.host,
            a.gossip_port,
            f"rpc {a.rpc_addr}",
            Path(a.log).name,
        )
        for a in rec.agents
    ]
    out(table(rows, ("member", "kind", "name", "pid", "host", "gossip", "door", "log")))


def next_step(rec: ClusterRecord, *, foreground: bool) -> list[str]:
    """What to do now: the dashboard to open, and how to stop the cluster."""
    name = "" if rec.name == "default" else f" --name {rec.name}"
    url = next((n.dashboard for n in rec.nodes if n.dashboard), "")
    watch = (
        f"open {url}/ to watch (who sees whom: {url}/views)" if url else "no dashboards (--no-viz)"
    )
    if foreground:
        return [
            f"{watch}; Ctrl-C stops all",
            "changes, one line each (processes, what each node sees, leaders, faults):",
        ]
    return [f"{watch}; status: rt_cluster status{name}; stop: rt_cluster down{name}"]


def real_and_simulated(cut: Sequence[int] | None, simulated: str) -> str:
    """The faults cell of a node in a namespace: the real cut (routes; None: not known), then
    what its process simulates (``-`` none, ``?`` not known)."""
    parts = ["cut ?" if cut is None else f"cut from {id_list(cut)} (real)" if cut else ""]
    if simulated not in ("-", ""):
        parts.append(simulated if simulated == "?" else f"{simulated} (simulated)")
    return "; ".join(p for p in parts if p) or "-"


def status_lines(rec: ClusterRecord, strays: Sequence[Member]) -> list[str]:
    """What ``status`` adds below its table: the network of nodes in namespaces, the last log
    line of each node (or Serf agent) that ended on its own, and processes of the cluster that
    are no node's current one."""
    lines = []
    if rec.network is not None:
        net = rec.network
        lines.append(
            f"network: {net.subnet} on bridge {net.bridge} (this host {net.gateway}); "
            "partitions and cuts are real (unreachable routes inside the namespaces), loss, "
            "delay, clocks and disk faults simulated inside the node processes"
        )
    for n in rec.nodes:
        if n.ended is not None and n.state in ("exited", "failed") and n.ended.last_line:
            lines.append(
                f"node {n.node_id} ({n.ended.describe()}), last log line: {n.ended.last_line}"
            )
    for a in rec.agents:
        if a.ended is not None and a.state in ("exited", "failed") and a.ended.last_line:
            lines.append(f"agent {a.name} ended, last log line: {a.ended.last_line}")
    for m in strays:
        lines.append(
            f"also running: {m.label()}, not the node's current process; "
            f"rt_cluster down --name {rec.name} stops it"
        )
    return lines
