"""A chaos test on a mixed cluster: ``open_cluster(2, "real", serf=2)`` starts two rtsim nodes
speaking memberlist and two real Serf agents; views name every member by its number, the
agents' through ``serf members``; a killed agent is seen dead by every other member, a killed
node by the agents too; nothing is left running. Skipped without Debian's serf."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cluster.local import live_members, read_record
from scenarios import open_cluster
from tests.support import running

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs Debian's serf"),
]


@pytest.mark.timeout(240)
async def test_a_chaos_test_on_nodes_and_serf_agents(tmp_path: Path) -> None:
    directory = tmp_path / "c"
    async with open_cluster(2, mode="real", serf=2, directory=directory, name="mx") as c:
        assert c.running == [0, 1, 2, 3]
        views = await c.views()
        assert set(views) == {0, 1, 2, 3}
        assert all(row == dict.fromkeys(range(4), "alive") for row in views.values()), views
        assert c.dashboard_url(3) is None  # an agent has none
        with pytest.raises(ValueError, match="serf-3 are Serf agents"):
            await c.loss(10.0, [3])
        home = directory / "cluster"
        pids = [m.pid for m in live_members(home, read_record(home))]  # agents: in the record
        assert len(pids) == 4

        await c.kill(3)
        await c.wait_dead(3, within=60)  # nodes 0, 1 and agent 2 all hold it dead
        await c.kill(1)
        await c.wait_dead(1, by=[2], within=60)  # the agent, through serf members
        events = await c.events()
        assert any(e["subject"] == 3 and e["new"] == "dead" for e in events), events[-5:]
    assert [p for p in pids if running(p)] == []
    assert live_members(home, read_record(home)) == []
