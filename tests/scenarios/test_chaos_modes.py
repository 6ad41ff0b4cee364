"""One chaos test body, passing on the simulated network, on real node processes and on node
processes in network namespaces alike."""

from __future__ import annotations

import pytest

from cluster.local.netns import privileged
from scenarios import Cluster, checks
from scenarios.pytest_plugin import OpenCluster

needs_root = pytest.mark.skipif(
    not privileged(), reason="network namespaces, veth pairs and routes need root"
)
MODES = [
    pytest.param("sim", id="sim"),
    pytest.param("real", id="real", marks=pytest.mark.slow),
    pytest.param("netns", id="netns", marks=[pytest.mark.slow, needs_root]),
]


async def _kill_restart_pause_resume(c: Cluster) -> None:
    await c.kill(2)
    await c.wait_dead(2)
    await c.restart(2)
    await c.wait_converged()
    await c.pause(1)
    await c.wait_dead(1)
    await c.resume(1)
    await c.wait_alive(1)
    await c.wait_converged()
    views = await c.views()
    assert sorted(views) == [0, 1, 2]
    assert all(state == "alive" for row in views.values() for state in row.values())
    result = await c.check(
        checks.dead(2, after="kill1"), checks.dead(1, after="pause3"), checks.alive(1)
    )
    assert result.ok, result.report
    dead_seen = {(e["observer"], e["subject"]) for e in await c.events() if e["new"] == "dead"}
    assert {(0, 2), (1, 2), (0, 1), (2, 1)} <= dead_seen


@pytest.mark.parametrize("mode", MODES)
async def test_the_same_body_passes_in_every_mode(rt_cluster: OpenCluster, mode: str) -> None:
    c = await rt_cluster(3, mode=mode, seed=21)
    assert c.mode == mode
    url = c.dashboard_url(0)
    assert (url is None) == (mode == "sim")
    await _kill_restart_pause_resume(c)


async def test_a_partition_and_its_heal_in_sim(rt_cluster: OpenCluster) -> None:
    # On real processes and in namespaces: docs/testing.md's partition test (test_testing_doc).
    c = await rt_cluster(3, mode="sim", seed=22, swim={"rejoin_interval": 5.0})
    await c.partition([0, 1])
    await c.wait_dead(2, by=[0, 1], within=30)
    await c.wait_dead(0, by=[2], within=30)
    await c.heal()
    await c.wait_converged()
    result = await c.check(checks.converged(after="heal2"))
    assert result.ok, result.report
