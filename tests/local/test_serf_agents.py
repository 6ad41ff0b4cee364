"""Real Serf agents as processes of a local cluster: started detached and recorded, joining each
other, seen by ``serf members``, killed and ended by pid, nothing of theirs left after
``down``; and a launch whose agent cannot start ends every process it started (``up`` rule
2). Skipped without ``serf`` on PATH."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from cluster.local import (
    AgentRecord,
    NodeFailed,
    cluster_dir,
    launch,
    live_members,
    open_local,
    plan_cluster,
    serf_members,
)
from cluster.local.mixed import MixedCluster
from tests.support import running, wait_for
from tests.support.clusters import quiet_config, wait_nothing_holds

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs serf on PATH"),
]


def _agent(cluster: MixedCluster, index: int) -> AgentRecord:
    rec = cluster.record.member(index)
    assert isinstance(rec, AgentRecord)
    return rec


async def test_agents_join_each_other_are_killed_and_ended_by_pid(cluster_home: Path) -> None:
    # one node planned but never started: only the agents' side, which needs no rtsim node
    rec = plan_cluster(cluster_dir("ag"), "ag", 1, base_port=0, runtime_base_port=0, serf=2)
    cluster = open_local(rec)
    assert isinstance(cluster, MixedCluster)
    cluster.create()
    first = cluster.spawn_agent(1)
    assert first.pid > 0
    assert first.pgid == first.pid  # a session of its own: signals go to its group
    assert _agent(cluster, 1).pid == first.pid  # recorded as soon as the spawn returned
    await cluster.wait_agent_ready(1, 20)
    cluster.spawn_agent(2)
    second = await cluster.wait_agent_ready(2, 20)
    want = {"serf-1": "alive", "serf-2": "alive"}
    wait_for("both agents to list both", lambda: serf_members(second.rpc_addr) == want)
    assert await cluster.views({1, 2}) == {1: set(want), 2: set(want)}

    await cluster.kill(1)
    assert not running(first.pid)
    assert _agent(cluster, 1).state == "killed"
    wait_for(
        "serf-2 to see serf-1 fail",
        lambda: serf_members(second.rpc_addr).get("serf-1") == "failed",
        timeout=60,
    )
    ended = await cluster.down()
    assert [m.label() for m in ended] == [f"agent serf-2 pid {second.pid}"]
    assert not running(second.pid)
    assert live_members(rec.directory, cluster.reload()) == []
    assert _agent(cluster, 2).state == "stopped"
    wait_nothing_holds(Path(rec.directory))


async def test_a_launch_whose_agent_cannot_start_ends_everything(
    cluster_home: Path, tmp_path: Path
) -> None:
    rec = plan_cluster(
        cluster_dir("bad"),
        "bad",
        1,
        base_port=0,
        runtime_base_port=0,
        serf=2,
        config=str(quiet_config(tmp_path)),
    )
    cluster = open_local(rec)
    taken = rec.agents[1].gossip_port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as hold:  # serf-2 cannot bind
        hold.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        hold.bind(("127.0.0.1", taken))
        hold.listen()
        with pytest.raises(NodeFailed, match=r"agent serf-2 .* exited during start-up") as info:
            await launch(cluster, timeout=60)
    assert "serf-2.log" in str(info.value)
    after = cluster.reload()
    started = [m.pid for m in (*after.nodes, *after.agents) if m.pid]
    assert len(started) == 3  # node 0 and both agents were started ...
    assert not any(running(pid) for pid in started)  # ... and every one has ended
    assert live_members(rec.directory, after) == []
    wait_nothing_holds(Path(rec.directory))
