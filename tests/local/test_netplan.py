"""The plan of a namespaced cluster's network as pure data (``cluster.local.netplan``) and the
choice of a cluster's network (``cluster.local.network``), without root: no namespace, link or
route is made here."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from cluster.local import BadInput, ClusterError, ClusterRecord, NodeRecord
from cluster.local.netplan import (
    NETNS_DIR,
    check_subnet,
    cut_plan,
    enter_argv,
    ids_cut,
    link_name,
    max_slot,
    namespace_name,
    network_key,
    next_place,
    node_places,
    slot_of,
)
from cluster.local.network import Loopback, Namespaces, network_of

SUBNET = "10.77.250.0/24"


def _node(i: int, host: str, netns: str = "") -> NodeRecord:
    return NodeRecord(
        node_id=i,
        pid=0,
        runtime_port=9413 + i,
        dashboard_port=8080 + i,
        dashboard="",
        log=f"node-{i}.log",
        events=f"node-{i}.events",
        state="starting",
        host=host,
        netns=netns,
    )


def _record(directory: Path, n: int, *, subnet: str = "") -> ClusterRecord:
    network = check_subnet(directory, subnet, n) if subnet else None
    if network is None:
        nodes = tuple(_node(i, "127.0.0.1") for i in range(n))
    else:
        nodes = tuple(_node(i, a, ns) for i, (a, ns) in enumerate(node_places(network, n)))
    return ClusterRecord(
        name="np",
        directory=str(directory),
        hostfile=str(directory / "hostfile"),
        config="",
        host="127.0.0.1",
        created=0.0,
        nodes=nodes,
        network=network,
    )


def test_every_name_derives_from_the_directory(tmp_path: Path) -> None:
    network = check_subnet(tmp_path / "c", SUBNET, 3)
    key = network_key(tmp_path / "c")
    assert len(key) == 6
    assert key != network_key(tmp_path / "d")
    assert (network.key, network.bridge, network.gateway) == (key, f"rtb{key}", "10.77.250.254")
    assert namespace_name(network, 1) == f"rtn{key}-1"
    assert len(link_name(key, 65534)) <= 15  # IFNAMSIZ - 1
    assert node_places(network, 2) == [
        ("10.77.250.1", f"rtn{key}-1"),
        ("10.77.250.2", f"rtn{key}-2"),
    ]
    assert slot_of(network, "10.77.250.9") == 9
    with pytest.raises(ValueError, match="not in"):
        slot_of(network, "10.77.251.9")
    assert max_slot(network) == 253  # .254 is the host's, .255 the broadcast
    argv = enter_argv(f"rtn{key}-1", ["/py", "-m", "cluster.node.zygote"])
    assert argv[:2] == ["/py", "-I"]
    assert argv[3] == str(NETNS_DIR / f"rtn{key}-1")
    assert argv[-3:] == ["/py", "-m", "cluster.node.zygote"]


@pytest.mark.parametrize(
    ("subnet", "n", "message"),
    [
        ("10.77.0.0/33", 1, "not an IPv4 network"),
        ("8.8.8.0/24", 1, "use a private network"),
        ("10.77.0.0/30", 1, "of /16 to /29"),
        ("10.77.0.0/29", 6, "has room for 5 nodes, not 6"),
    ],
)
def test_a_subnet_that_cannot_be_is_refused(
    tmp_path: Path, subnet: str, n: int, message: str
) -> None:
    with pytest.raises(BadInput, match=message):
        check_subnet(tmp_path, subnet, n)


def test_one_more_node_takes_the_slot_after_the_highest(tmp_path: Path) -> None:
    record = _record(tmp_path, 3, subnet="10.77.250.0/29")
    assert record.network is not None
    assert next_place(record, record.network) == ("10.77.250.4", f"rtn{record.network.key}-4")
    full = replace(record, nodes=(*record.nodes, _node(3, "10.77.250.5")))
    with pytest.raises(ClusterError, match="no address left"):
        next_place(full, record.network)


def test_a_partition_cuts_each_side_off_from_the_other(tmp_path: Path) -> None:
    record = _record(tmp_path, 4, subnet=SUBNET)
    plan = cut_plan(record, [[0, 1], [2]])
    assert plan == {
        0: ["10.77.250.3"],
        1: ["10.77.250.3"],
        2: ["10.77.250.1", "10.77.250.2"],
    }  # node 3 is in no group: its paths stay
    with pytest.raises(ClusterError):
        cut_plan(record, [[0], [9]])
    seen = {0: ["10.77.250.3", "10.77.99.1"], 1: [], 2: None}
    assert ids_cut(record, seen) == {0: [2], 1: [], 2: None}


def test_the_network_is_chosen_once_from_the_record(tmp_path: Path) -> None:
    assert isinstance(network_of(_record(tmp_path, 2)), Loopback)
    namespaced = _record(tmp_path, 2, subnet=SUBNET)
    network = network_of(namespaced)
    assert isinstance(network, Namespaces)
    node = namespaced.nodes[1]
    assert network.dashboard_args(namespaced, node) == ["--viz-bind", "10.77.250.2"]
    assert network.port_trouble("10.77.250.2", 9414) is None  # a fresh namespace's ports
    loopback = network_of(_record(tmp_path, 2))
    assert loopback.dashboard_args(namespaced, node) == []
    assert loopback.require() is None  # nothing to check on loopback


async def test_on_loopback_a_partition_is_each_nodes_own_block(tmp_path: Path) -> None:
    record = _record(tmp_path, 3)
    blocked: list[tuple[int, list[int]]] = []

    async def block(node_id: int, peers: list[int]) -> str | None:
        blocked.append((node_id, peers))
        return "node 2 is not running; skipped" if node_id == 2 else None

    notes = await network_of(record).partition(record, [[0, 1], [2]], block)
    assert blocked == [(0, [2]), (1, [2]), (2, [0, 1])]
    assert notes == ["node 2 is not running; skipped"]
