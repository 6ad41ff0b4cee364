"""One-way cuts and node clocks on real node processes of a loopback cluster (``rt_cluster
cut``, ``clock``, ``heal``): what each node says of its faults, its packets, its views, its
events and its probes."""

from __future__ import annotations

import re
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import trio

from cluster.local import BadInput, LocalCluster, load_record
from cluster.local.attached import AttachedCluster, read_hostfile
from cluster.rpc import Monitor
from tests.support import wait_for
from tests.support.clusters import rt_cluster, up_argv

pytestmark = pytest.mark.slow

# Probes every 0.5 s, so a window of probes is short.
FAST_SWIM = "workload: {enabled: false}\nswim: {probe_interval: 0.5}\n"
DAY = 86400.0


def up(name: str, n: int, tmp_path: Path) -> None:
    config = tmp_path / "node.yaml"
    config.write_text(FAST_SWIM)
    res = rt_cluster(*up_argv(name, n, config))
    assert res.returncode == 0, res.stdout + res.stderr


def ask(name: str, node: int, what: str) -> Any:
    """One monitor query of ``node`` over its RPC (``faults``, ``topology``, ``events``)."""

    async def one() -> Any:
        return await LocalCluster(load_record(name)).call(node, Monitor(what), timeout=5.0)

    return trio.run(one)


def metric(name: str, node: int, family: str, label: str = "") -> float:
    """The value of one line of the node's ``/metrics`` (0 when it has none yet)."""
    url = load_record(name).node(node).dashboard
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    pattern = re.compile(rf"^{family}(\{{[^}}]*{re.escape(label)}[^}}]*\}})? ([0-9.e+]+)$", re.M)
    found = pattern.search(text)
    return float(found.group(2)) if found else 0.0


def views(name: str, n: int) -> list[dict[int, str]]:
    return [{m["node_id"]: m["state"] for m in ask(name, i, "topology")["nodes"]} for i in range(n)]


def test_a_one_way_cut_between_real_nodes(cluster_home: Path, tmp_path: Path) -> None:
    up("cut", 4, tmp_path)
    try:
        res = rt_cluster("cut", "0", "1", "--name", "cut")
        assert res.returncode == 0, res.stderr
        assert "cut: 0 -> 1 (one way)" in res.stdout
        assert ask("cut", 0, "faults")["cut"] == [1]
        assert ask("cut", 1, "faults")["cut"] == []
        assert ask("cut", 0, "faults")["active"] is True
        status = rt_cluster("status", "--name", "cut").stdout
        assert "cut to 1" in status.splitlines()[2 + 0], status  # node 0's row
        # node 0 drops what it sends to 1; every node goes on probing, indirect probes
        # carry what the cut keeps from 1 and no one is declared dead
        dropped = metric("cut", 0, "rt_swim_dropped_total", 'reason="cut_out"')
        probes = metric("cut", 1, "rt_swim_probes_total")
        wait_for(
            "20 probes of node 1 and 20 packets node 0 did not send",
            lambda: (
                metric("cut", 1, "rt_swim_probes_total") - probes,
                metric("cut", 0, "rt_swim_dropped_total", 'reason="cut_out"') - dropped,
            ),
            until=lambda grown: min(grown) >= 20,
            timeout=60,
            interval=0.25,
        )
        seen = views("cut", 4)
        assert all(state != "dead" for view in seen for state in view.values()), seen
        assert metric("cut", 1, "rt_swim_dropped_total", 'reason="cut_out"') == 0
        res = rt_cluster("heal", "--name", "cut")
        assert res.returncode == 0, res.stderr
        assert ask("cut", 0, "faults")["cut"] == []
        attached_faults("cut")
    finally:
        res = rt_cluster("down", "--name", "cut")
    assert res.returncode == 0, res.stderr


def attached_faults(name: str) -> None:
    """The same cluster named by its hostfile (``--hostfile``): cut, clock and heal over the
    nodes' RPC; a clock is not kept in any record."""

    async def run() -> list[Any]:
        attached = AttachedCluster(read_hostfile(load_record(name).hostfile))
        await attached.cut([2, 3], [1])
        await attached.clock(3, 120.0, 1.5)
        seen = [await attached.call(i, Monitor("faults")) for i in (1, 2, 3)]
        with pytest.raises(BadInput, match="node 2 cannot be cut off from itself"):
            await attached.cut([2], [2])
        with pytest.raises(BadInput, match="clock rate"):
            await attached.clock(3, 0.0, 9.0)
        await attached.heal()
        return [*seen, await attached.call(3, Monitor("faults"))]

    one, two, three, healed = trio.run(run)
    assert (one["cut"], two["cut"], three["cut"]) == ([], [1], [1])
    assert three["clock"] == {"offset": 120.0, "rate": 1.5}
    assert (healed["cut"], healed["clock"]) == ([], {"offset": 0.0, "rate": 1.0})
    assert load_record(name).node(3).clock_offset == 0.0


def test_a_clock_a_day_back_outlives_a_restart_and_a_fast_clock_probes_faster(
    cluster_home: Path, tmp_path: Path
) -> None:
    up("clk", 3, tmp_path)
    try:
        res = rt_cluster("clock", "2", "--offset", "-86400", "--name", "clk")
        assert res.returncode == 0, res.stderr
        assert "clock of node 2: offset -86400 s, rate 1" in res.stdout
        assert ask("clk", 2, "faults")["clock"] == {"offset": -DAY, "rate": 1.0}
        assert load_record("clk").node(2).clock_offset == -DAY
        res = rt_cluster("restart", "2", "--name", "clk")
        assert res.returncode == 0, res.stdout + res.stderr
        assert ask("clk", 2, "faults")["clock"] == {"offset": -DAY, "rate": 1.0}
        # its events: wall stamps a day back, mono on the host's monotonic clock
        events = ask("clk", 2, "events")["events"]
        assert events
        now_wall, now_mono = time.time(), time.monotonic()
        for e in events:
            assert now_wall - DAY - 600 < e["wall"] <= now_wall - DAY + 5, e
            assert now_mono - 600 < e["mono"] <= now_mono + 5, e
        others = ask("clk", 0, "events")["events"]
        assert all(e["wall"] > now_wall - 600 for e in others)  # node 0's clock is true

        # a clock at twice the speed probes about twice as often as a true one
        res = rt_cluster("clock", "1", "--rate", "2", "--name", "clk")
        assert res.returncode == 0, res.stderr
        start = [metric("clk", i, "rt_swim_probes_total") for i in (0, 1)]
        grown = wait_for(
            "node 0 to probe 16 times",
            lambda: [metric("clk", i, "rt_swim_probes_total") - start[i] for i in (0, 1)],
            until=lambda counts: counts[0] >= 16,
            timeout=60,
            interval=0.25,
        )
        ratio = grown[1] / grown[0]
        assert 1.4 < ratio < 3.0, grown
        print(f"\nprobes over one window: true clock {grown[0]:g}, rate 2: {grown[1]:g}")  # -s
        res = rt_cluster("heal", "--name", "clk")
        assert res.returncode == 0, res.stderr
        assert ask("clk", 1, "faults")["clock"] == {"offset": 0.0, "rate": 1.0}
        assert ask("clk", 2, "faults")["clock"] == {"offset": 0.0, "rate": 1.0}
        assert load_record("clk").node(2).clock_offset == 0.0
    finally:
        res = rt_cluster("down", "--name", "clk")
    assert res.returncode == 0, res.stderr
