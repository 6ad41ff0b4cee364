"""``rt_cluster up --netns``: nodes with addresses of their own, each in a network namespace, on
a bridge of this host; real partitions; and the three safety rules (no default route in a
namespace, the host's unreachable route for the subnet outlives ``down``, nothing is sent once
the bridge is gone).

Every check of the network is made here with pyroute2 and /proc, apart from the code under
test. One cluster serves the module (its tests run in order: the last one removes its bridge);
a second, short one is crashed on purpose.
"""

from __future__ import annotations

import errno
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio

from cluster.local import ClusterError, Member, Processes, live_members, netplan, read_record
from cluster.local.attached import AttachedCluster, read_hostfile
from cluster.local.netns import (
    UNREACHABLE_METRIC,
    leftovers,
    network_key,
    privileged,
    remove_network,
    stranded_addresses,
)
from cluster.local.netplan import NETNS_DIR
from tests.support import open_harness, wait_for
from tests.support.clusters import NO_WORKLOAD, run_main, wait_nothing_holds

SUBNET, CRASH_SUBNET = "10.77.250.0/24", "10.77.251.0/24"
ADDRESSES = ["10.77.250.1", "10.77.250.2", "10.77.250.3"]
# Quick failure detection: a side cut off alone takes Max suspicion (6x Min) by default.
FAST_SWIM = NO_WORKLOAD + "swim: {probe_interval: 0.5, suspicion_max_timeout_mult: 1}\n"
needs_root = pytest.mark.skipif(
    not privileged(), reason="network namespaces, veth pairs and routes need root"
)


def _pyroute2() -> Any:
    import pyroute2  # type: ignore[import-untyped]

    return pyroute2


@dataclass
class Netns:
    """The module's cluster: its home, environment and directory."""

    home: Path
    env: dict[str, str]
    name: str = "nt"

    @property
    def directory(self) -> Path:
        return self.home / self.name

    def rt(self, *argv: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        """``rt_cluster ARGV`` on this cluster, in a process of its own."""
        return subprocess.run(
            [sys.executable, "-m", "scenarios.command", *argv, "--name", self.name],
            capture_output=True, text=True, timeout=timeout, env=self.env, check=False,
        )  # fmt: skip

    def status(self) -> dict[str, Any]:
        res = self.rt("status", "--json")
        assert res.returncode == 0, res.stderr
        body: dict[str, Any] = json.loads(res.stdout)
        return body


def _end(home: Path) -> None:
    """Last resort: every process of every cluster under ``home`` killed, every network of
    theirs removed (the processes first: a namespace lives while a process is in it)."""
    running: list[Member] = []
    for directory in [d for d in home.iterdir() if d.is_dir()]:
        running += live_members(directory, read_record(directory))
    try:
        trio.run(partial(Processes().terminate, running, hard=True, name=Member.label))
    finally:
        for directory in [d for d in home.iterdir() if d.is_dir()]:
            remove_network(network_key(directory))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Netns]:
    if not privileged():
        pytest.skip("network namespaces, veth pairs and routes need root")
    home = tmp_path_factory.mktemp("netns") / "clusters"
    home.mkdir()
    config = home.parent / "node.yaml"
    config.write_text(FAST_SWIM)
    c = Netns(home, {**os.environ, "RT_CLUSTER_HOME": str(home)})
    try:
        up = c.rt("up", "-n", "3", "--netns", "--subnet", SUBNET, "--config", str(config))
        assert up.returncode == 0, up.stdout + up.stderr
        yield c
    finally:
        try:
            c.rt("down")
        finally:
            _end(home)


# ---- what the network looks like from outside --------------------------------------------------


def _inode(path: str | Path) -> int:
    return os.stat(path).st_ino


def _routes(namespace: str) -> list[Any]:
    with _pyroute2().IPRoute(netns=namespace, flags=0) as inner:
        return list(inner.route("dump", table=254))


def _route_error(namespace: str, address: str) -> int:
    """The errno a route lookup for ``address`` gives inside ``namespace`` (0: a route)."""
    pr = _pyroute2()
    with pr.IPRoute(netns=namespace, flags=0) as inner:
        try:
            inner.route("get", dst=address)
        except pr.NetlinkError as exc:
            return int(exc.code)
    return 0


def _host_route(address: str) -> str:
    """``unreachable``, or the name of the link the host sends ``address`` through."""
    pr = _pyroute2()
    with pr.IPRoute() as ipr:
        try:
            (route,) = ipr.route("get", dst=address)
        except pr.NetlinkError as exc:
            if exc.code == errno.EHOSTUNREACH:
                return "unreachable"
            raise
        return str(ipr.get_links(route.get("RTA_OIF"))[0].get("IFLA_IFNAME"))


def _subnet_unreachable_route(subnet: str) -> list[Any]:
    net, length = subnet.split("/")
    with _pyroute2().IPRoute() as ipr:
        return [
            r
            for r in ipr.route("dump", family=socket.AF_INET, table=254)
            if r.get("RTA_DST") == net and r["dst_len"] == int(length) and r["type"] == 7
            and r.get("RTA_PRIORITY") == UNREACHABLE_METRIC
        ]  # fmt: skip


def _views(dashboard: str) -> dict[int, str]:
    """What the node behind ``dashboard`` holds of each member, asked from this host."""
    body = httpx.get(f"{dashboard}/api/topology", timeout=2.0).json()
    return {n["node_id"]: n["state"] for n in body["nodes"]}


# ---- the tests, in order ----------------------------------------------------------------------


@needs_root
@pytest.mark.slow
def test_each_node_runs_in_its_namespace_at_its_own_address(cluster: Netns) -> None:
    body = cluster.status()
    nodes = body["nodes"]
    assert [n["host"] for n in nodes] == ADDRESSES
    assert [n["state"] for n in nodes] == ["running"] * 3
    network = body["network"]
    assert (network["subnet"], network["gateway"]) == (SUBNET, "10.77.250.254")
    assert (network["real"], network["simulated"]) == (
        ["partition", "cut"],
        ["loss", "delay", "clock", "disk"],
    )
    lines = (cluster.directory / "hostfile").read_text().splitlines()
    assert lines == [f"{n['host']}:{n['runtime_port']}" for n in nodes]
    record = read_record(cluster.directory)
    assert record is not None
    for n, rec in zip(nodes, record.nodes, strict=True):
        # the recorded pid is the node's, and it lives in the node's namespace
        assert _inode(f"/proc/{n['pid']}/ns/net") == _inode(NETNS_DIR / rec.netns)
        assert _inode(f"/proc/{n['pid']}/ns/net") != _inode("/proc/self/ns/net")
        routes = _routes(rec.netns)
        assert [r for r in routes if r["dst_len"] == 0] == []  # no default route, v4 or v6
        assert _route_error(rec.netns, "192.0.2.1") == errno.ENETUNREACH
        assert n["dashboard"].startswith(f"http://{n['host']}:")
        assert httpx.get(n["dashboard"] + "/", timeout=5.0).status_code == 200
        assert _views(n["dashboard"]) == {0: "alive", 1: "alive", 2: "alive"}
    assert _host_route(ADDRESSES[0]) == network["bridge"]
    text = cluster.rt("status").stdout
    assert "10.77.250.2" in text.splitlines()[3]
    assert f"network: {SUBNET} on bridge {network['bridge']}" in text


@needs_root
@pytest.mark.slow
def test_a_second_cluster_on_a_taken_subnet_is_refused_before_anything_is_made(
    cluster: Netns,
) -> None:
    other = Netns(cluster.home, cluster.env, name="other")
    res = other.rt("up", "-n", "2", "--netns", "--subnet", "10.77.250.0/25")
    assert res.returncode == 2
    bridge = cluster.status()["network"]["bridge"]
    assert "--subnet 10.77.250.0/25 is in use on this host: address 10.77.250.254/24" in res.stderr
    assert f"on {bridge} (rtsim cluster {cluster.directory})" in res.stderr
    assert "use another, e.g. --subnet 10.77." in res.stderr
    assert not other.directory.exists()
    assert leftovers(network_key(other.directory)) == []


@needs_root
@pytest.mark.slow
def test_a_partition_cuts_the_real_path_and_heal_restores_it(cluster: Netns) -> None:
    nodes = cluster.status()["nodes"]
    urls = [n["dashboard"] for n in nodes]
    res = cluster.rt("partition", "0", "1,2")
    assert res.returncode == 0, res.stderr
    assert "partitioned (real: unreachable routes in the namespaces): 0 | 1,2" in res.stdout
    record = read_record(cluster.directory)
    assert record is not None
    ns = [n.netns for n in record.nodes]
    assert _route_error(ns[0], ADDRESSES[1]) == errno.EHOSTUNREACH
    assert _route_error(ns[1], ADDRESSES[0]) == errno.EHOSTUNREACH
    assert _route_error(ns[1], ADDRESSES[2]) == 0  # the same side still talks
    expect = [{0: "alive", 1: "dead", 2: "dead"}, {0: "dead", 1: "alive", 2: "alive"},
              {0: "dead", 1: "alive", 2: "alive"}]  # fmt: skip
    wait_for("each side to hold the other dead", lambda: [_views(u) for u in urls],
             until=lambda seen: seen == expect, timeout=60, interval=0.25)  # fmt: skip
    after = cluster.status()["nodes"]
    assert [n["cut_from"] for n in after] == [[1, 2], [0], [0]]
    assert [n["faults"]["blocked"] for n in after] == [[], [], []]  # nothing simulated
    text = cluster.rt("status").stdout
    assert "cut from 1, 2 (real)" in text.splitlines()[2]

    res = cluster.rt("heal")
    assert res.returncode == 0, res.stderr
    assert [_route_error(n, a) for n in ns for a in ADDRESSES] == [0] * 9
    every = {0: "alive", 1: "alive", 2: "alive"}
    wait_for("every node to hold every node alive again", lambda: [_views(u) for u in urls],
             until=lambda seen: seen == [every] * 3, timeout=60, interval=0.25)  # fmt: skip
    assert [n["cut_from"] for n in cluster.status()["nodes"]] == [[], [], []]


_RECEIVE = """
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 0))
print(s.getsockname()[1], flush=True)
s.settimeout(30)
print(s.recvfrom(100)[0].decode(), flush=True)
"""
_SEND = """
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(600):
    try:
        s.sendto(b"across", (sys.argv[1], int(sys.argv[2])))
    except OSError as exc:
        print(exc.errno, flush=True)
        sys.exit(0)
    time.sleep(0.05)
print("sent", flush=True)
"""


def _in_namespace(namespace: str, code: str, *args: str) -> list[str]:
    return netplan.enter_argv(namespace, [sys.executable, "-c", code, *args])


def _udp_across(source_ns: str, target_ns: str, target: str) -> str:
    """Send datagrams from ``source_ns`` to a socket at ``target`` in ``target_ns``: what
    the receiver read (``across``), or the sender's errno when it could not send."""
    with subprocess.Popen(
        _in_namespace(target_ns, _RECEIVE, target), stdout=subprocess.PIPE, text=True
    ) as receiver:
        try:
            assert receiver.stdout is not None
            port = receiver.stdout.readline().strip()
            sender = subprocess.run(
                _in_namespace(source_ns, _SEND, target, port),
                capture_output=True, text=True, timeout=60, check=False,
            )  # fmt: skip
            if sender.stdout.strip() != "sent":
                return sender.stdout.strip()
            return receiver.stdout.readline().strip()
        finally:
            receiver.kill()


@needs_root
@pytest.mark.slow
def test_a_one_way_cut_is_a_route_in_the_senders_namespace_only(cluster: Netns) -> None:
    res = cluster.rt("cut", "0", "1")
    assert res.returncode == 0, res.stderr
    assert "cut (real: unreachable routes in FROM's namespaces): 0 -> 1 (one way)" in res.stdout
    record = read_record(cluster.directory)
    assert record is not None
    ns = [n.netns for n in record.nodes]
    assert _route_error(ns[0], ADDRESSES[1]) == errno.EHOSTUNREACH
    assert _route_error(ns[0], ADDRESSES[2]) == 0
    assert [_route_error(ns[1], a) for a in ADDRESSES] == [0, 0, 0]  # none in TO's
    assert _udp_across(ns[1], ns[0], ADDRESSES[0]) == "across"  # UDP still flows 1 -> 0
    assert _udp_across(ns[0], ns[1], ADDRESSES[1]) == str(errno.EHOSTUNREACH)
    assert [n["cut_from"] for n in cluster.status()["nodes"]] == [[1], [], []]
    res = cluster.rt("cut", "0", "2")  # cuts add up
    assert res.returncode == 0, res.stderr
    assert [n["cut_from"] for n in cluster.status()["nodes"]] == [[1, 2], [], []]
    res = cluster.rt("heal")
    assert res.returncode == 0, res.stderr
    assert [_route_error(n, a) for n in ns for a in ADDRESSES] == [0] * 9


@needs_root
@pytest.mark.slow
def test_a_clock_kept_across_a_restart_and_a_disk_fault_on_netns_nodes(cluster: Netns) -> None:
    """The clock and disk faults reach nodes inside their namespaces, over the same RPC as on
    one host: a clock a day back survives a restart, a disk fault names its device, and heal
    removes both."""
    nodes = cluster.status()["nodes"]
    create = {"pool_name": "nx_m", "pool_id": "931.0", "bdev_type": "ram", "capacity": "1M"}
    answer = httpx.post(f"{nodes[2]['dashboard']}/api/mod/rt_bdev/create", data=create, timeout=10)
    assert answer.status_code == 200, answer.text
    for argv in (("clock", "1", "--offset", "-86400", "--rate", "1.5"),
                 ("disk", "2", "nx_m", "--errors", "100"), ("restart", "1")):  # fmt: skip
        res = cluster.rt(*argv)
        assert res.returncode == 0, (*argv, res.stderr)

    def faults_shown() -> list[Any] | None:
        faults = [n["faults"] for n in cluster.status()["nodes"]]
        return faults if all(f is not None for f in faults) else None  # each answered

    faults = wait_for("every node's faults answer", faults_shown, timeout=30)
    assert faults[1]["clock"] == {"offset": -86400.0, "rate": 1.5}  # kept by the restart
    assert faults[2]["disk"] == {"nx_m": {"latency_ms": 0.0, "errors": 100.0, "full": False}}
    assert [f["active"] for f in faults] == [False, True, True]
    res = cluster.rt("heal")
    assert res.returncode == 0, res.stderr
    faults = wait_for("every node's faults answer", faults_shown, timeout=30)
    assert [f["active"] for f in faults] == [False, False, False]
    assert faults[1]["clock"] == {"offset": 0.0, "rate": 1.0}


@needs_root
@pytest.mark.slow
def test_without_the_bridge_nothing_is_sent_and_down_removes_the_rest(cluster: Netns) -> None:
    body = cluster.status()
    bridge = body["network"]["bridge"]
    pids = [n["pid"] for n in body["nodes"]]
    with _pyroute2().IPRoute() as ipr:
        ipr.link("del", index=ipr.link_lookup(ifname=bridge)[0])
    # The host now routes the whole subnet to "unreachable": nothing can leave the machine.
    assert [_host_route(a) for a in ADDRESSES] == ["unreachable"] * 3
    for argv in (("status",), ("partition", "0", "1,2"), ("kill", "1"), ("loss", "all", "5")):
        res = cluster.rt(*argv)
        assert (res.returncode, res.stdout) == (1, ""), argv
        assert f"its bridge {bridge} is gone" in res.stderr
        assert "nothing was sent to them" in res.stderr
    assert all(Path(f"/proc/{pid}").exists() for pid in pids)  # kill refused: all still run
    # a hostfile naming those addresses that is no cluster's record (a copy) is refused too
    assert stranded_addresses([*ADDRESSES, "127.0.0.1", "node.example"]) == list(ADDRESSES)
    copy = cluster.directory.parent / "hostfile-copy"
    copy.write_text((cluster.directory / "hostfile").read_text())
    with pytest.raises(ClusterError, match=r"bridge is gone.*nothing was sent"):
        AttachedCluster(read_hostfile(copy), str(copy))

    res = cluster.rt("down")
    assert res.returncode == 0, res.stderr
    key = network_key(cluster.directory)
    assert leftovers(key) == []
    assert [n for n in os.listdir(NETNS_DIR) if key in n] == []
    assert [n for _, n in socket.if_nameindex() if key in n] == []
    wait_nothing_holds(cluster.directory)
    # the unreachable route outlives the cluster
    assert len(_subnet_unreachable_route(SUBNET)) == 1
    assert [_host_route(a) for a in (*ADDRESSES, "10.77.250.200")] == ["unreachable"] * 4


@needs_root
@pytest.mark.slow
def test_a_crashed_up_is_cleaned_by_down_and_by_the_next_up(tmp_path: Path) -> None:
    home = tmp_path / "clusters"
    home.mkdir()
    env = {"RT_CLUSTER_HOME": str(home)}
    c = Netns(home, {**os.environ, **env}, name="crash")
    key = network_key(c.directory)
    argv = [sys.executable, "-m", "scenarios.command", "up", "-n", "3", "--netns",
            "--subnet", CRASH_SUBNET, "--no-viz", "--name", "crash"]  # fmt: skip
    try:
        with open_harness(tmp_path) as harness:
            up = harness.start(argv, "up", env=env)

            def first_node_recorded() -> bool:
                harness.require_alive(up)
                rec = read_record(c.directory)
                return rec is not None and rec.nodes[0].pid > 0

            wait_for("up to start node 0", first_node_recorded, timeout=60)
            harness.kill(up)  # mid-way: the nodes and the namespaces stay behind
        assert len([n for n in leftovers(key) if n.startswith("rtn")]) == 3
        assert live_members(c.directory, read_record(c.directory))
        res = c.rt("down")
        assert res.returncode == 0, res.stderr
        assert leftovers(key) == []
        wait_nothing_holds(c.directory)

        # a leftover the record does not name (a crash before the record was written)
        _pyroute2().netns.create(f"rtn{key}-9")
        assert leftovers(key) == [f"rtn{key}-9"]
        up2 = c.rt("up", "-n", "1", "--netns", "--subnet", CRASH_SUBNET, "--no-viz")
        assert up2.returncode == 0, up2.stderr
        assert [n for n in leftovers(key) if n.startswith("rtn")] == [f"rtn{key}-1"]
        assert c.rt("down").returncode == 0
        assert leftovers(key) == []
    finally:
        _end(home)


def test_without_root_up_netns_is_one_line_and_makes_nothing(
    cluster_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("cluster.local.netns.privileged", lambda status=None: False)
    code, out, err = run_main("up", "-n", "2", "--netns", "--name", "nr")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert "rt_cluster: --netns needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN" in err
    assert list(cluster_home.iterdir()) == []
    code, _, err = run_main("up", "-n", "2", "--subnet", "10.77.0.0/24", "--name", "nr")
    assert code == 2
    assert "--subnet is the subnet of --netns; add --netns" in err


@pytest.mark.parametrize(
    ("subnet", "message"),
    [
        ("10.77.0.0/33", "not an IPv4 network like 10.77.0.0/24"),
        ("10.77.0.1/24", "not an IPv4 network like 10.77.0.0/24"),  # host bits set
        ("8.8.8.0/24", "use a private network"),
        ("10.77.0.0/30", "use a private network"),
        ("10.77.0.0/29", "has room for 5 nodes, not 9"),
    ],
)
def test_a_bad_subnet_is_refused_by_name(tmp_path: Path, subnet: str, message: str) -> None:
    from cluster.local import BadInput
    from cluster.local.netns import plan_network

    with pytest.raises(BadInput, match=message):
        plan_network(tmp_path, subnet, 9)


def test_privileges_are_read_from_the_effective_capabilities() -> None:
    both = (1 << 12) | (1 << 21)
    assert privileged(f"Name:\tx\nCapEff:\t{both:016x}\n")
    assert not privileged(f"CapEff:\t{1 << 12:016x}\n")
    assert not privileged("CapEff:\t0000000000000000\n")
    assert not privileged("")
