"""Who holds a port: the processes with a socket bound to it, found in ``/proc`` (the socket
inodes of ``/proc/net/{tcp,tcp6,udp,udp6}`` matched against the links in
``/proc/<pid>/fd``), each named by its command line and, for a node of a local cluster, by
its node id and cluster, with how to end it.

Rules:
1. Linux only, pure reading: nothing here binds, connects or signals. Processes of other
   users cannot be inspected; the answer then says so instead of guessing.
2. A node of a local cluster is recognised by its stdout (its log, ``<dir>/node-<id>.log``)
   and the record of that directory, not by its name.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from .ledger import members
from .ports import check_port_free
from .record import ClusterError, clusters_home, read_record, start_marker

__all__ = ["describe_holders", "port_holders", "port_trouble"]

NODE_LOG = re.compile(r"node-(\d+)\.log")
CMD_CHARS = 90  # a command line is cut to this many characters
# how to choose other ports, in rt_cluster's words (open_cluster's base_port/runtime_base_port)
PORT_OPTIONS = " (--base-port, --runtime-base-port; 0 picks free ports)"


def _socket_inodes(port: int, *, udp: bool) -> set[int]:
    """The inodes of the sockets bound to ``port`` (TCP, and UDP when asked), any address;
    0 among them for a closing connection that no process owns any more."""
    inodes: set[int] = set()
    for proto in ("tcp", "tcp6", *(("udp", "udp6") if udp else ())):
        try:
            lines = Path(f"/proc/net/{proto}").read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 10:
                continue
            try:
                local_port = int(fields[1].rpartition(":")[2], 16)
                inode = int(fields[9])
            except ValueError:
                continue
            if local_port == port:
                inodes.add(inode)
    return inodes


def port_holders(port: int, *, udp: bool = True) -> list[int]:
    """The pids (of processes we may inspect) holding a socket bound to ``port``."""
    inodes = {f"socket:[{i}]" for i in _socket_inodes(port, udp=udp) if i}
    found = []
    for entry in Path("/proc").iterdir() if inodes else ():
        if entry.name.isdigit() and not inodes.isdisjoint(_fd_links(entry)):
            found.append(int(entry.name))
    return sorted(found)


def _fd_links(proc: Path) -> set[str]:
    """What the open descriptors of a process point at (none for another user's process)."""
    try:
        fds = list((proc / "fd").iterdir())
    except OSError:  # gone, or another user's
        return set()
    links = set()
    for fd in fds:
        try:
            links.add(os.readlink(fd))
        except OSError:  # closed meanwhile
            continue
    return links


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return " ".join(a.decode(errors="replace") for a in raw.split(b"\0") if a) or "?"


def _short(cmd: str) -> str:
    return cmd if len(cmd) <= CMD_CHARS else cmd[: CMD_CHARS - 4] + " ..."


def _describe(pid: int) -> tuple[str, str]:
    """(what the process is, how to end it)."""
    cmd = _cmdline(pid)
    rec, m = None, None
    try:
        log = Path(os.readlink(f"/proc/{pid}/fd/1"))
        if (m := NODE_LOG.fullmatch(log.name)) is not None:
            rec = read_record(log.parent)
    except (OSError, ClusterError):
        pass
    if rec is None or m is None:
        return _short(cmd), f"end it (kill {pid}) or choose other ports{PORT_OPTIONS}"
    marker = start_marker(pid)
    known = [x for x in members(rec.directory, rec) if (x.pid, x.started) == (pid, marker)]
    if known and known[0].argv:  # a forked node's own command line is the zygote's
        cmd = "python -m cluster.node.cli " + " ".join(known[0].argv)
    what = f"{_short(cmd)}; node {m.group(1)} of cluster {rec.name}"
    if known and Path(rec.directory).parent == clusters_home():
        return what, f"stop it with: rt_cluster down --name {rec.name} (or kill {pid})"
    if known:
        return what, f"end it: kill {pid} (its cluster's files are in {rec.directory})"
    return what, f"end it: kill {pid} (an orphan: the cluster's record does not list it)"


def describe_holders(port: int, *, udp: bool = True) -> str:
    """``port 9413 is taken by pid 1234 (...; node 0 of cluster demo); stop it with: ...``."""
    pids = port_holders(port, udp=udp)
    if not pids and 0 in _socket_inodes(port, udp=udp):
        return (
            f"port {port} is held by a closing connection that no process owns any more (the "
            f"kernel releases it within a minute); try again or choose other ports{PORT_OPTIONS}"
        )
    if not pids:
        return (
            f"port {port} is taken by a process this user cannot inspect (another user's, or "
            f"in another network namespace); choose other ports{PORT_OPTIONS}"
        )
    parts, hints = [], []
    for pid in pids[:3]:
        what, hint = _describe(pid)
        parts.append(f"pid {pid} ({what})")
        hints.append(hint)
    more = f" and {len(pids) - 3} more" if len(pids) > 3 else ""
    return f"port {port} is taken by {', '.join(parts)}{more}; {'; '.join(dict.fromkeys(hints))}"


def port_trouble(host: str, port: int, *, udp: bool = True) -> str | None:
    """None when ``port`` is free on ``host``; else why not, naming who holds it."""
    why = check_port_free(host, port, udp=udp)
    if why is None:
        return None
    if "in use" not in why:
        return why
    return f"{why}; {describe_holders(port, udp=udp)}"
