"""Nodes off loopback: the runtime port and the dashboard bound on a non-loopback address of
this machine, the Host allowlist and the cross-site checks still on, and an advertised address
apart from a wildcard bind.

The addresses are two of TEST-NET-2 (198.51.100.0/24, never routed) put on one end of a veth
pair made for this module (pyroute2, needs root) and removed after it, so nothing here is
reachable from outside the machine. Without the rights to make the pair, a non-loopback
address the machine already has is used; with neither, the module is skipped.

Node 0 binds address A (runtime and dashboard). Node 1 binds 0.0.0.0 and advertises B, the
hostfile lists A and B: the two form one cluster, each knowing the other by its hostfile
address.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import httpx
import psutil
import pytest
import trio

from cluster.ground.errors import ApiError
from cluster.local import free_port, pick_free_ports
from cluster.rpc import Identity, Monitor, rpc_call
from tests.support import RETRY_ON, Child, Harness, open_harness, wait_for

pytestmark = pytest.mark.slow

CONFIG = "workload: {enabled: false}\n"
RETRY = (*RETRY_ON, httpx.HTTPError, ApiError)


@dataclass(frozen=True)
class Addresses:
    a: str  # node 0 binds it
    b: str  # node 1 advertises it (bound through 0.0.0.0)


@contextlib.contextmanager
def _veth_pair() -> Iterator[Addresses | None]:
    """Two TEST-NET-2 addresses on a veth pair of our own, removed at the end of the block;
    None without the rights or the kernel support to make one."""
    from pyroute2 import IPRoute
    from pyroute2.netlink.exceptions import NetlinkError

    tag = os.getpid() % 100000
    name, peer = f"rtolb{tag}", f"rtolp{tag}"
    host = 2 + (tag % 120) * 2
    pair = Addresses(f"198.51.100.{host}", f"198.51.100.{host + 1}")
    with IPRoute() as ipr:
        try:
            ipr.link("add", ifname=name, kind="veth", peer=peer)
        except (NetlinkError, OSError):
            yield None
            return
        try:
            index = ipr.link_lookup(ifname=name)[0]
            for address in (pair.a, pair.b):
                ipr.addr("add", index=index, address=address, prefixlen=32)
            ipr.link("set", index=index, state="up")
            yield pair
        finally:
            ipr.link("del", ifname=name)  # the peer end goes with it


def _existing() -> Addresses | None:
    """A non-loopback IPv4 address this machine has (used for A and, bound through 0.0.0.0,
    advertised as B too)."""
    for addrs in psutil.net_if_addrs().values():
        for a in addrs:
            if a.family == socket.AF_INET and not ipaddress.ip_address(a.address).is_loopback:
                return Addresses(a.address, a.address)
    return None


@pytest.fixture(scope="module")
def addresses() -> Iterator[Addresses]:
    with _veth_pair() as made:
        if made is not None:
            yield made
            return
    existing = _existing()
    if existing is None:
        pytest.skip("no non-loopback address, and no rights to add one (veth needs root)")
    yield existing


@dataclass(frozen=True)
class Pair:
    harness: Harness
    addresses: Addresses
    node0: Child  # bound on A
    node1: Child  # bound on 0.0.0.0, advertising B
    viz0: int

    @property
    def url0(self) -> str:
        return f"http://{self.addresses.a}:{self.viz0}"


@pytest.fixture(scope="module")
def pair(addresses: Addresses, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pair]:
    workdir = tmp_path_factory.mktemp("offloopback")
    a, b = addresses.a, addresses.b
    with open_harness(workdir) as harness:
        p0 = free_port(a)
        (p1,) = pick_free_ports("0.0.0.0", 1, udp=True, avoid={p0})
        hostfile = workdir / "hostfile"
        hostfile.write_text(f"{a}:{p0}\n{b}:{p1}\n")
        config = workdir / "rt.yaml"
        config.write_text(CONFIG)
        common = ("--hostfile", str(hostfile), "--config", str(config))
        node0 = harness.start_dashboard_node(
            "--host", a, "--viz-bind", a, *common, port=p0, name="node0"
        )
        node1 = harness.start_node(
            "--host", "0.0.0.0", "--advertise", b, "--no-viz", *common, port=p1, name="node1"
        )
        yield Pair(harness, addresses, node0, node1, node0.viz_port)


def get(pair: Pair, path: str, host: str | None = None, **kw: Any) -> httpx.Response:
    headers = {"Host": host} if host is not None else {}
    return httpx.get(pair.url0 + path, headers=headers, timeout=10, **kw)


def both_alive(body: dict[str, Any]) -> dict[str, Any] | None:
    return body if [n["state"] for n in body["nodes"]] == ["alive", "alive"] else None


def topologies(pair: Pair) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Each node's host table once both list both nodes alive: node 0's from its dashboard
    on A, node 1's over its RPC (through its wildcard bind, on loopback)."""
    pair.harness.require_alive(pair.node0)
    pair.harness.require_alive(pair.node1)
    seen0 = both_alive(get(pair, "/api/topology").json())
    seen1 = both_alive(trio.run(rpc_call, "127.0.0.1", pair.node1.port, Monitor("topology"), 5.0))
    return (seen0, seen1) if seen0 and seen1 else None


def test_runtime_and_dashboard_bound_off_loopback_form_a_cluster(pair: Pair) -> None:
    a, b = pair.addresses.a, pair.addresses.b
    both = wait_for("both nodes to list both alive", lambda: topologies(pair), retry_on=RETRY)
    for body in both:  # each knows node 1 by what it advertises, never 0.0.0.0
        assert {n["node_id"]: n["ip_address"] for n in body["nodes"]} == {0: a, 1: b}
    # a forward from node 0's dashboard reaches node 1 at its advertised address
    workers = get(pair, "/api/nodes/1/workers")
    assert workers.status_code == 200, workers.text
    health = get(pair, "/api/health").json()
    assert (health["node_id"], health["ip_address"]) == (0, a)
    # the runtime port and the dashboard are bound on A only: not on loopback
    for port in (pair.node0.port, pair.viz0):
        with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    ident0 = trio.run(rpc_call, a, pair.node0.port, Identity(), 5.0)
    assert ident0["dashboard"] == pair.url0
    log1 = pair.harness.log_text(pair.node1)
    assert f"node 1 up: runtime 0.0.0.0:{pair.node1.port}, advertised as {b}" in log1


def test_host_allowlist_off_loopback(pair: Pair) -> None:
    wait_for("node 0's dashboard", lambda: get(pair, "/api/health"), retry_on=RETRY)
    a, b = pair.addresses.a, pair.addresses.b
    port = pair.viz0
    for allowed in (f"{a}:{port}", a):
        r = get(pair, "/api/health", host=allowed)
        assert r.status_code == 200, (allowed, r.text)
    refused = [f"127.0.0.1:{port}", f"localhost:{port}", "evil.example", f"evil.example:{port}",
               f"{a}:{port + 1}", socket.gethostname()]  # fmt: skip
    if b != a:
        refused.append(f"{b}:{port}")  # another address of this machine, not bound here
    for host in refused:
        r = get(pair, "/api/health", host=host)
        assert r.status_code == 403, host
        assert r.json()["error"].startswith(f"refusing request for host '{host}'")


def test_cross_site_posts_are_refused_off_loopback(pair: Pair) -> None:
    wait_for("node 0's dashboard", lambda: get(pair, "/api/health"), retry_on=RETRY)
    own = f"{pair.addresses.a}:{pair.viz0}"
    form = {"mod_name": "rt_bdev", "pool_name": "x", "action": "validate"}
    url = pair.url0 + "/api/pools/compose"
    for headers in ({"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"},
                    {"Origin": "http://evil.example"}, {"Origin": "http://127.0.0.1"}):  # fmt: skip
        r = httpx.post(url, data=form, headers=headers, timeout=10)
        assert r.status_code == 403, headers
        assert r.json()["error"].startswith("refusing ")
    # the dashboard's own page may post: the request reaches the handler
    same = {"Origin": f"http://{own}", "Sec-Fetch-Site": "same-origin"}
    r = httpx.post(url, data=form, headers=same, timeout=10)
    assert r.status_code != 403, r.text
    assert "refusing" not in r.text


def test_a_wildcard_bind_without_advertise_is_refused(harness: Harness) -> None:
    node = harness.start_node("--host", "0.0.0.0", "--no-viz")
    assert harness.wait_exit(node, timeout=30) == 2
    assert (
        "networking.host '0.0.0.0' binds every address, which peers cannot use: set "
        "networking.advertise (--advertise ADDR)"
    ) in harness.log_text(node)
