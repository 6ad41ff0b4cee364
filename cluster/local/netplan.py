"""The plan of a namespaced cluster's network as pure data: the names of its bridge, namespaces
and links, each node's address, the subnet a request may take, where a program runs inside a
namespace, and which addresses a partition cuts where. ``netns`` carries it out over netlink.

Rules:
1. Every name derives from the cluster directory (``network_key``, 6 hex digits): the bridge
   ``rtb<key>``, per node the namespace ``rtn<key>-<slot>`` and the host end of its veth pair
   ``rtv<key>-<slot>`` (the end inside is ``eth0``). A node's slot is its address's offset in
   the subnet (node i of ``up``: slot i+1). Two clusters never share a name, and what a crash
   left behind is found by name even when no record lists it.
2. A subnet is a private IPv4 network of /16 to /29 with room for the nodes; the address
   below its broadcast is the host's (``gateway``), so the highest slot is the one below.
3. A partition is planned per node: the addresses of every node of the other groups, which
   ``netns.cut`` makes unreachable inside that node's namespace.
4. Nothing here touches the host: no netlink, no files, no processes (tested without root).

Errors: ``BadInput`` for a subnet that cannot be; ``ClusterError`` for a subnet that is full.
"""

from __future__ import annotations

import hashlib
import ipaddress
from collections.abc import Mapping, Sequence
from pathlib import Path

from .record import BadInput, ClusterError, ClusterRecord, Network

__all__ = [
    "DEFAULT_SUBNET",
    "NETNS_DIR",
    "check_subnet",
    "cut_plan",
    "enter_argv",
    "ids_cut",
    "link_name",
    "max_slot",
    "namespace_name",
    "network_key",
    "next_place",
    "node_address",
    "node_places",
    "slot_of",
]

DEFAULT_SUBNET = "10.77.0.0/24"
NETNS_DIR = Path("/var/run/netns")  # where ip-netns(8) and pyroute2 name namespaces
NSEXEC = Path(__file__).with_name("nsexec.py")
PRIVATE = tuple(ipaddress.IPv4Network(n) for n in ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"))


# ---- names and addresses (rule 1) ---------------------------------------------------------


def network_key(directory: str | Path) -> str:
    """6 hex digits naming the network of the cluster in ``directory`` (rule 1)."""
    return hashlib.sha256(str(Path(directory).resolve()).encode()).hexdigest()[:6]


def namespace_name(network: Network, slot: int) -> str:
    return f"rtn{network.key}-{slot}"


def link_name(key: str, slot: int) -> str:
    return f"rtv{key}-{slot}"  # at most 3 + 6 + 1 + 5 = 15 characters (IFNAMSIZ - 1)


def node_address(network: Network, slot: int) -> str:
    return str(ipaddress.IPv4Network(network.subnet)[slot])


def slot_of(network: Network, address: str) -> int:
    """The offset of ``address`` in the subnet (ValueError when it is not in it)."""
    net = ipaddress.IPv4Network(network.subnet)
    addr = ipaddress.IPv4Address(address)
    if addr not in net:
        raise ValueError(f"{address} is not in {network.subnet}")
    return int(addr) - int(net.network_address)


def max_slot(network: Network) -> int:
    """The highest slot a node may take (the one above it is the host's, ``gateway``)."""
    return ipaddress.IPv4Network(network.subnet).num_addresses - 3


def enter_argv(namespace: str, argv: Sequence[str]) -> list[str]:
    """``argv`` (a Python command line) run inside ``namespace``: the same interpreter runs
    ``nsexec.py``, which enters the namespace and execs ``argv`` (the same pid)."""
    return [argv[0], "-I", str(NSEXEC), str(NETNS_DIR / namespace), *argv]


# ---- the subnet and the nodes' places (rule 2) --------------------------------------------


def check_subnet(directory: str | Path, subnet: str, n: int) -> Network:
    """The network of a cluster of ``n`` nodes in ``subnet``; BadInput when the subnet is not
    a private IPv4 network with room for them (what this host uses is ``netns``'s check)."""
    try:
        net = ipaddress.IPv4Network(subnet, strict=True)
    except ValueError:
        raise BadInput(
            f"--subnet {subnet[:40]!r}: not an IPv4 network like {DEFAULT_SUBNET}"
        ) from None
    if not any(net.subnet_of(p) for p in PRIVATE) or not 16 <= net.prefixlen <= 29:
        raise BadInput(
            f"--subnet {net}: use a private network (10/8, 172.16/12 or 192.168/16) of /16 to /29"
        )
    key = network_key(directory)
    network = Network(str(net), key, f"rtb{key}", str(net[-2]))
    if n > max_slot(network):
        raise BadInput(f"--subnet {net} has room for {max_slot(network)} nodes, not {n}")
    return network


def node_places(network: Network, n: int) -> list[tuple[str, str]]:
    """The address and namespace of each of the ``n`` nodes of ``up``: node i in slot i+1."""
    return [(node_address(network, i + 1), namespace_name(network, i + 1)) for i in range(n)]


def next_place(record: ClusterRecord, network: Network) -> tuple[str, str]:
    """The address and namespace of one more node: the slot after the highest taken."""
    slots = [slot_of(network, n.host) for n in record.nodes if n.host]
    slot = max(slots, default=0) + 1
    if slot > max_slot(network):
        raise ClusterError(f"the subnet {network.subnet} has no address left for a node")
    return node_address(network, slot), namespace_name(network, slot)


# ---- partitions (rule 3) ------------------------------------------------------------------


def cut_plan(record: ClusterRecord, groups: Sequence[Sequence[int]]) -> dict[int, list[str]]:
    """Per node of ``groups``, the addresses its namespace makes unreachable: those of every
    node of the other groups (a node in no group keeps its paths)."""
    plan: dict[int, list[str]] = {}
    for g, members in enumerate(groups):
        others = [i for h, grp in enumerate(groups) if h != g for i in grp]
        away = [record.host_of(record.node(i)) for i in others]
        for nid in members:
            plan[nid] = away
    return plan


def ids_cut(
    record: ClusterRecord, addresses: Mapping[int, list[str] | None]
) -> dict[int, list[int] | None]:
    """Per node, the ids of the nodes at the ``addresses`` cut off inside its namespace (None
    stays None: not known)."""
    by_address = {record.host_of(n): n.node_id for n in record.nodes}
    return {
        node_id: None if cut is None else sorted(by_address[a] for a in cut if a in by_address)
        for node_id, cut in addresses.items()
    }
