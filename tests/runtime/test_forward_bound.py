"""The forward's bound is the peers' own, enforced once (``cluster.runtime.peers`` rule 2): the
runtime hands out the peers and the member (``reach``) and adds no timer of its own, so a
peers' timeout longer or shorter than 5 s is the bound a forward gets, worded the same."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from cluster.ground.errors import PeerUnavailable, PeerUnreachable
from cluster.ground.settings import load_settings
from cluster.runtime import FORWARD_TIMEOUT
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers


@pytest.fixture
def runtime(tmp_path: Path) -> Runtime:
    settings = load_settings("embedded", env={"HOME": str(tmp_path)})
    return Runtime(settings, 0, membership=FakeMembership.of(3))


async def test_the_bound_is_the_peers_timeout(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peers = FakePeers(runtime)
    peers.timeout, peers.delay = 8.0, 6.0  # a slow answer within the peers' own bound
    assert runtime.forward_timeout == 8.0
    start = trio.current_time()
    body = await runtime.node_monitor("1", "workers", {})
    assert body["node_id"] == 1
    assert trio.current_time() - start == pytest.approx(6.0)


async def test_a_silent_peer_costs_the_peers_timeout_once(
    runtime: Runtime, autojump_clock: trio.testing.MockClock
) -> None:
    peers = FakePeers(runtime)
    peers.timeout = 2.0
    peers.hang(1)
    start = trio.current_time()
    with pytest.raises(PeerUnavailable, match=r"^monitor 'workers' timed out after 2s$"):
        await runtime.node_monitor("1", "workers", {})
    assert trio.current_time() - start == pytest.approx(2.0)


async def test_a_refusing_peer_is_named(runtime: Runtime) -> None:
    FakePeers(runtime).refuse(2)
    with pytest.raises(PeerUnreachable, match=r"^node 2 did not answer monitor 'workers': "):
        await runtime.node_monitor("2", "workers", {})


def test_without_peers_the_bound_is_the_default(runtime: Runtime) -> None:
    assert runtime.forward_timeout == FORWARD_TIMEOUT
    with pytest.raises(PeerUnavailable, match="this runtime has no RPC"):
        runtime.reach(1)
