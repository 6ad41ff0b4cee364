"""Nodes with addresses of their own (``rt_cluster up --netns``): the netlink calls that carry
out a cluster's network plan (``netplan``: its names, addresses and cuts as data) on this
host: its namespaces, veth pairs and bridge, and the routes that cut and restore the paths
between its nodes.

Rules:
1. Names, addresses and slots are ``netplan``'s (its rule 1); this module looks them up on
   the host, makes and removes them.
2. Nothing is made before the cluster record names it (``record`` rule 4). Making is
   idempotent: leftovers of the same name are removed first. ``remove_network`` removes every
   namespace, link and the bridge named after the key.
3. Traffic for the subnet never leaves the machine. No namespace has a default route (only
   loopback and the subnet's connected route). The host holds an ``unreachable`` route for
   the whole subnet (metric ``UNREACHABLE_METRIC``, above the bridge's connected route, 0)
   that stays after ``remove_network``: while the bridge is up its route wins; once it is
   gone nothing for the subnet goes to the default gateway. And no command sends anything to
   a node's address unless its cluster's bridge exists (``require_bridge``, before every RPC).
4. One subnet, one bridge: a subnet overlapping an address or a route of this host (another
   cluster's bridge, a real network) is refused before anything is made, naming what holds
   it and a free subnet to use instead. A program that picks a free subnet itself does so
   under ``choosing_subnet`` (a lock file of this host) and makes its bridge before leaving
   it, so two such programs at once (pytest-xdist workers) never pick the same one.
5. A partition is real: ``unreachable`` routes (protocol ``ROUTE_PROTO``) inside each
   namespace for the addresses of the other side; ``heal`` removes them. A one-way cut
   (``cut_one_way``) is such a route in the sending node's namespace only: what it sends
   there fails, what the other side sends still arrives (a TCP connection from the other
   side fails too: its SYN-ACK cannot leave). Cuts add up; a partition replaces them all.
   ``unreachable`` rather than ``blackhole`` or ``prohibit``: for a local sender all three
   fail at once (none is silent), and EHOSTUNREACH is what a real network answers for a host
   it cannot reach, while blackhole's EINVAL and prohibit's EACCES read as bugs or
   permission problems in the nodes' counters (``send_error_113``) and logs.
6. It needs CAP_NET_ADMIN and CAP_SYS_ADMIN (root): ``require_privileges`` says so in one
   line before anything is planned.

Errors: ``BadInput`` for a request that cannot be (no privileges, a bad or taken subnet);
``ClusterError`` for a failed operation (netlink's own words).
"""

from __future__ import annotations

import errno
import fcntl
import ipaddress
import os
import socket
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from .netplan import NETNS_DIR, check_subnet, ids_cut, link_name, network_key, slot_of
from .record import BadInput, ClusterError, ClusterRecord, Network, NodeRecord

__all__ = [
    "ROUTE_PROTO",
    "UNREACHABLE_METRIC",
    "bridge_present",
    "choosing_subnet",
    "cut",
    "cut_addresses",
    "cut_nodes",
    "cut_one_way",
    "leftovers",
    "make_network",
    "make_node",
    "network_key",  # netplan's; here too for the callers that name it as netns's
    "plan_network",
    "privileged",
    "remove_network",
    "require_bridge",
    "require_privileges",
    "restore",
    "stranded_addresses",
]

UNREACHABLE_METRIC = 7700  # the host's unreachable route for a subnet (rule 3)
ROUTE_PROTO = 77  # rtnetlink protocol of the partition routes inside namespaces (rule 5)
INNER_LINK = "eth0"
CAP_NET_ADMIN, CAP_SYS_ADMIN = 12, 21
RTN_UNREACHABLE = 7
LOCK_DIRS = (Path("/run/lock"), Path(tempfile.gettempdir()))  # where choosing_subnet's lock is


def _pyroute2() -> Any:
    """pyroute2, imported when first needed: 0.1 s that commands on clusters without
    namespaces never pay."""
    import pyroute2  # type: ignore[import-untyped]

    return pyroute2


# ---- privileges (rule 6) ------------------------------------------------------------------


def privileged(status: str | None = None) -> bool:
    """Whether this process holds CAP_NET_ADMIN and CAP_SYS_ADMIN (``status``: the text of
    /proc/self/status, read when None)."""
    if status is None:
        try:
            status = Path("/proc/self/status").read_text()
        except OSError:
            return os.geteuid() == 0
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            caps = int(line.split()[1], 16)
            return all(caps >> bit & 1 for bit in (CAP_NET_ADMIN, CAP_SYS_ADMIN))
    return False


def require_privileges(what: str) -> None:
    if not privileged():
        raise BadInput(
            f"{what} needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN, for network namespaces, "
            "veth pairs and routes); run it as root, e.g. with sudo"
        )


# ---- planning (rule 4) --------------------------------------------------------------------


def plan_network(directory: str | Path, subnet: str, n: int) -> Network:
    """The network of a cluster of ``n`` nodes in ``subnet``; BadInput when the subnet is not
    a private IPv4 network with room for them (``netplan.check_subnet``), or this host already
    uses part of it."""
    network = check_subnet(directory, subnet, n)
    net = ipaddress.IPv4Network(network.subnet)
    trouble = _subnet_trouble(net, network.bridge)
    if trouble:
        free = _free_subnet(network.bridge)
        hint = f"; use another, e.g. --subnet {free}" if free else ""
        raise BadInput(f"--subnet {net} is in use on this host: {trouble}{hint}")
    return network


def _subnet_trouble(net: ipaddress.IPv4Network, bridge: str) -> str:
    """What on this host already uses part of ``net`` ("" when nothing does), besides the
    cluster's own bridge and the unreachable routes rule 3 leaves behind."""
    with _pyroute2().IPRoute() as ipr:
        links = ipr.get_links()
        names = {link["index"]: link.get("IFLA_IFNAME") for link in links}
        aliases = {link["index"]: link.get("IFLA_IFALIAS") for link in links}
        for a in ipr.get_addr(family=socket.AF_INET):
            iface = ipaddress.IPv4Interface(f"{a.get('IFA_ADDRESS')}/{a['prefixlen']}")
            name = names.get(a["index"], "?")
            if iface.network.overlaps(net) and name != bridge:
                owner = f" ({aliases[a['index']]})" if aliases.get(a["index"]) else ""
                return f"address {iface} on {name}{owner}"
        for r in ipr.route("dump", family=socket.AF_INET, table=254):
            dst = ipaddress.IPv4Network(f"{r.get('RTA_DST') or '0.0.0.0'}/{r['dst_len']}")
            if r["dst_len"] < net.prefixlen or not dst.overlaps(net):
                continue  # a wider route: the subnet's own routes are more specific
            ours = names.get(r.get("RTA_OIF")) == bridge or (
                r["type"] == RTN_UNREACHABLE and r.get("RTA_PRIORITY") == UNREACHABLE_METRIC
            )
            if not ours:
                return f"a route for {dst} (type {r['type']}, {names.get(r.get('RTA_OIF'), '-')})"
    return ""


def _free_subnet(bridge: str) -> str:
    """A /24 of 10.77.0.0/16 nothing on this host uses; "" when there is none."""
    for candidate in ipaddress.IPv4Network("10.77.0.0/16").subnets(new_prefix=24):
        if not _subnet_trouble(candidate, bridge):
            return str(candidate)
    return ""


@contextmanager
def choosing_subnet() -> Iterator[str]:
    """A /24 of 10.77.0.0/16 nothing on this host uses, held under this host's lock on
    choosing subnets until the ``with`` block ends: make the bridge inside it (rule 4).
    BadInput when every one is taken."""
    home = next((d for d in LOCK_DIRS if d.is_dir() and os.access(d, os.W_OK)), LOCK_DIRS[-1])
    with open(home / "rtsim-netns.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        free = _free_subnet("")
        if not free:
            raise BadInput("every /24 of 10.77.0.0/16 is in use on this host")
        yield free


# ---- making and removing (rules 2 and 3) --------------------------------------------------


@contextmanager
def _netlink(namespace: str | None = None) -> Iterator[Any]:
    """An rtnetlink socket on the host (or inside ``namespace``); netlink errors become
    ClusterError. A namespace that does not exist is never created (``flags=0``)."""
    pyroute2 = _pyroute2()
    try:
        with pyroute2.IPRoute(netns=namespace, flags=0) if namespace else pyroute2.IPRoute() as ipr:
            yield ipr
    except pyroute2.NetlinkError as exc:
        where = f" in namespace {namespace}" if namespace else ""
        raise ClusterError(f"netlink{where}: {os.strerror(exc.code)}") from None
    except FileNotFoundError:
        raise ClusterError(f"network namespace {namespace} is gone") from None


def _index(ipr: Any, name: str) -> int | None:
    found = ipr.link_lookup(ifname=name)
    return found[0] if found else None


def make_network(directory: str | Path, network: Network, nodes: Sequence[NodeRecord]) -> None:
    """The bridge, the host's address on it, the unreachable route for the subnet, and each
    node's namespace (rule 2: leftovers of the same names are removed first)."""
    remove_network(network.key)
    net = ipaddress.IPv4Network(network.subnet)
    with _netlink() as ipr:
        try:
            ipr.route("add", dst=str(net), type="unreachable", priority=UNREACHABLE_METRIC)
        except _pyroute2().NetlinkError as exc:
            if exc.code != errno.EEXIST:  # left by an earlier cluster on this subnet: ours too
                raise
        ipr.link("add", ifname=network.bridge, kind="bridge")
        bridge = _index(ipr, network.bridge)
        ipr.link("set", index=bridge, ifalias=f"rtsim cluster {directory}"[:250])
        ipr.addr("add", index=bridge, address=network.gateway, prefixlen=net.prefixlen)
        ipr.link("set", index=bridge, state="up")
    for node in nodes:
        make_node(network, node)


def make_node(network: Network, node: NodeRecord) -> None:
    """The node's namespace (loopback up, no default route) and its veth pair: ``eth0`` with
    the node's address inside, the other end on the bridge."""
    slot = slot_of(network, node.host)
    link = link_name(network.key, slot)
    _remove_namespace(node.netns)
    with _netlink() as ipr:
        if (old := _index(ipr, link)) is not None:
            ipr.link("del", index=old)
        bridge = _index(ipr, network.bridge)
        if bridge is None:
            raise ClusterError(f"the bridge {network.bridge} is gone")
        _pyroute2().netns.create(node.netns)
        ipr.link(
            "add", ifname=link, kind="veth", peer={"ifname": INNER_LINK, "net_ns_fd": node.netns}
        )
        ipr.link("set", index=_index(ipr, link), master=bridge, state="up")
    prefixlen = ipaddress.IPv4Network(network.subnet).prefixlen
    with _netlink(node.netns) as inner:
        eth = _index(inner, INNER_LINK)
        inner.addr("add", index=eth, address=node.host, prefixlen=prefixlen)
        inner.link("set", index=eth, state="up")
        inner.link("set", index=_index(inner, "lo"), state="up")


def leftovers(key: str) -> list[str]:
    """The namespaces and links on this host named after ``key`` (rule 1)."""
    try:
        found = [n for n in os.listdir(NETNS_DIR) if n.startswith(f"rtn{key}-")]
    except FileNotFoundError:
        found = []
    found += [n for _, n in socket.if_nameindex() if n.startswith((f"rtv{key}-", f"rtb{key}"))]
    return sorted(found)


def _remove_namespace(name: str) -> None:
    try:
        _pyroute2().netns.remove(name)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise ClusterError(f"cannot remove network namespace {name}: {exc.strerror}") from None


def remove_network(key: str) -> list[str]:
    """Remove every namespace, veth pair and the bridge named after ``key``; what was
    removed. The host's unreachable route for the subnet stays (rule 3)."""
    gone = leftovers(key)
    with _netlink() as ipr:
        for name in gone:
            if name.startswith(("rtv", "rtb")) and (index := _index(ipr, name)) is not None:
                ipr.link("del", index=index)  # one end of a pair takes the other with it
    for name in gone:
        if name.startswith("rtn"):
            _remove_namespace(name)
    return gone


# ---- the safety of every command (rule 3) -------------------------------------------------


def bridge_present(network: Network) -> bool:
    try:
        socket.if_nametoindex(network.bridge)
    except OSError:
        return False
    return True


def require_bridge(record: ClusterRecord) -> None:
    """ClusterError, before anything is sent, when the cluster's nodes have addresses of
    their own and its bridge is gone (rule 3)."""
    network = record.network
    if network is not None and not bridge_present(network):
        raise ClusterError(
            f"cluster {record.name!r}: its bridge {network.bridge} is gone, so its nodes' "
            f"addresses ({network.subnet}) are out of reach and nothing was sent to them; "
            f"remove what is left with: rt_cluster down --name {record.name}"
        )


def stranded_addresses(hosts: Sequence[str]) -> list[str]:
    """The ``hosts`` (IPv4 addresses) that only a left-behind ``unreachable`` route of ours
    covers: a namespaced cluster's address whose bridge is gone, named by a hostfile that is no
    cluster record (a copy, say). Rule 3 holds for them too: nothing is sent. Names and
    loopback are never ours, and cost no netlink look."""
    ours: list[ipaddress.IPv4Address] = []
    for host in hosts:
        try:
            address = ipaddress.IPv4Address(host)
        except ValueError:
            continue
        if address.is_private and not address.is_loopback:
            ours.append(address)
    if not ours:
        return []
    unreachable: list[ipaddress.IPv4Network] = []
    linked: list[ipaddress.IPv4Network] = []
    with _netlink() as ipr:
        for r in ipr.route("dump", family=socket.AF_INET, table=254):
            dst = ipaddress.IPv4Network(f"{r.get('RTA_DST') or '0.0.0.0'}/{r['dst_len']}")
            if r["type"] == RTN_UNREACHABLE and r.get("RTA_PRIORITY") == UNREACHABLE_METRIC:
                unreachable.append(dst)
            elif r.get("RTA_OIF") is not None and r["dst_len"] > 0:
                linked.append(dst)
    return [
        str(a)
        for a in ours
        if any(a in net for net in unreachable) and not any(a in net for net in linked)
    ]


# ---- partitions (rule 5) ------------------------------------------------------------------


def cut(node: NodeRecord, addresses: Sequence[str]) -> None:
    """Inside the node's namespace, make ``addresses`` unreachable (replacing earlier cuts)."""
    restore(node)
    with _netlink(node.netns) as inner:
        for address in addresses:
            inner.route("add", dst=f"{address}/32", type="unreachable", proto=ROUTE_PROTO)


def cut_one_way(node: NodeRecord, addresses: Sequence[str]) -> None:
    """Inside the node's namespace only, make ``addresses`` unreachable too (a one-way cut,
    rule 5: the node sends them nothing; earlier cuts stay)."""
    with _netlink(node.netns) as inner:
        there = {str(r.get("RTA_DST")) for r in _cut_routes(inner)}
        for address in addresses:
            if address not in there:
                inner.route("add", dst=f"{address}/32", type="unreachable", proto=ROUTE_PROTO)


def restore(node: NodeRecord) -> None:
    """Remove every partition route inside the node's namespace."""
    with _netlink(node.netns) as inner:
        for r in _cut_routes(inner):
            inner.route("del", dst=f"{r.get('RTA_DST')}/32", type="unreachable", proto=ROUTE_PROTO)


def _cut_routes(inner: Any) -> list[Any]:
    return [
        r
        for r in inner.route("dump", family=socket.AF_INET, table=254)
        if r["type"] == RTN_UNREACHABLE and r["proto"] == ROUTE_PROTO
    ]


def cut_nodes(record: ClusterRecord) -> dict[int, list[int] | None]:
    """Per node, the ids of the nodes its namespace's routes cut it off from (None: not
    known); {} for a cluster without namespaces."""
    if record.network is None:
        return {}
    return ids_cut(record, {n.node_id: cut_addresses(n) for n in record.nodes})


def cut_addresses(node: NodeRecord) -> list[str] | None:
    """The addresses cut off inside the node's namespace; None when that cannot be read (no
    privileges, or the namespace is gone)."""
    if not node.netns or not privileged():
        return None
    try:
        with _netlink(node.netns) as inner:
            return sorted(str(r.get("RTA_DST")) for r in _cut_routes(inner))
    except ClusterError:
        return None
