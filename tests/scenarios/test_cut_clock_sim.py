"""One-way cuts, clocks and disk faults through the Python API and scenario files in sim
(issue 46): checked arguments, recorded actions, the report's words, a replay event for
event, and the simulator's one-line refusal of disk faults."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster.local import ClusterError
from scenarios import analyse, find_scenario, load_scenario, open_cluster
from scenarios.play.sim import play_sim, run_sim
from scenarios.replay import write_failure
from scenarios.reporting.charts import action_label


async def test_cut_and_clock_are_recorded_and_replay_event_for_event(tmp_path: Path) -> None:
    async with open_cluster(5, mode="sim", seed=4) as c:
        await c.cut(0, [3])
        await c.clock(2, offset=-3600, rate=1.5)
        await c.sleep(30)
        await c.heal()
        await c.wait_converged()
        assert (await c.check()).ok
    kinds = [(a.kind, a.step, a.nodes, a.groups, a.value, a.rate) for a in c.actions]
    assert kinds[:2] == [
        ("cut", "cut1", (0,), ((0,), (3,)), 0.0, 1.0),
        ("clock", "clock2", (2,), (), -3600.0, 1.5),
    ]
    failure = write_failure(c, tmp_path / "out", "replayed")
    data = yaml.safe_load(failure.scenario.read_text())
    assert data["steps"][0]["cut"] == {"from": [0], "to": [3]}
    assert data["steps"][1]["clock"] == {"node": 2, "offset": -3600.0, "rate": 1.5}
    page = (tmp_path / "out" / "report.html").read_text()
    assert "cut 0 -&gt; 3" in page
    assert "clock 2 -3600 s x1.5" in page
    scenario = load_scenario(failure.scenario, sim=True)
    trace = await play_sim(scenario)
    assert analyse(trace, scenario).verdict == "pass"
    mine = c.final_history().trace
    assert [e for e in trace.events if e["mono"] <= mine.end] == mine.events


async def test_node_wall_stamps_follow_its_clock() -> None:
    async with open_cluster(3, mode="sim", seed=1) as c:
        await c.clock(1, offset=-86_400.0)
        await c.kill(0)
        await c.wait_dead(0)
        events = (await c.history()).trace.events  # the event-log shape: mono and wall
    set_at = c.actions[0].t  # events before it were stamped by the true clock
    seen = [e for e in events if e["observer"] == 1 and e["subject"] == 0 and e["mono"] > set_at]
    assert seen
    assert all(e["wall"] == pytest.approx(e["mono"] - 86_400.0) for e in seen)


async def test_bad_arguments_are_one_clear_value_error() -> None:
    async with open_cluster(3, mode="sim", seed=1) as c:
        bad = [
            (c.cut(1, [0, 1]), "a cut from a node to itself: node 1"),
            (c.cut([], 1), "a cut needs nodes on both sides"),
            (c.cut(0, 7), "no node 7"),
            (c.clock(1, offset=4e7), "clock offset is at most 31622400 s"),
            (c.clock(1, offset=float("inf")), "clock offset must be a finite number"),
            (c.clock(1, rate=2.5), r"clock rate is 0.5..2.0, not 2.5"),
            (c.clock(1, rate=float("nan")), "clock rate must be a finite number"),
            (c.clock(9), "no node 9"),
            (c.disk(1, "m1", latency_ms=-1), "disk latency_ms is 0..600000, not -1"),
            (c.disk(1, "m1", errors=100.5), r"disk errors is a percentage \(0..100\)"),
            (c.disk(1, ""), "a disk pool is a name"),
        ]
        for call, needle in bad:
            with pytest.raises(ValueError, match=needle):
                await call
        assert c.actions == []  # nothing recorded for a refused call


async def test_the_simulator_refuses_a_disk_fault_with_one_line() -> None:
    async with open_cluster(3, mode="sim", seed=1) as c:
        with pytest.raises(ClusterError, match="the simulator runs no disks") as got:
            await c.disk(1, "m1", latency_ms=200, errors=10)
        assert "\n" not in str(got.value)


def test_the_words_for_cut_clock_and_disk() -> None:
    assert action_label("cut", [0, 1], [[0, 1], [3, 4, 5]]) == "cut 0, 1 -> 3\u20135"
    assert action_label("clock", [2], value=-3600.0, rate=1.0) == "clock 2 -3600 s x1.0"
    assert action_label("clock", [2], value=30.0, rate=0.75) == "clock 2 30 s x0.75"
    disk = action_label("disk", [1], value=200.0, pool="m1", errors=10.0, full=True)
    assert disk == "disk 1 m1 200 ms 10 % full"
    assert action_label("disk", [1], value=0.0, pool="m1") == "disk 1 m1 0 ms 0 %"


def test_the_library_clock_jump_back_restarts_with_an_earlier_boot_taken_back() -> None:
    scenario = load_scenario(find_scenario("clock_jump_back"), sim=True)
    trace = run_sim(scenario)
    assert trace.boots is not None
    first, restarted = trace.boots[2][-2:]
    assert restarted < first  # drawn from a clock a minute back
    last = max(a.t for a in trace.actions if a.step == "restart")
    took = {e["observer"] for e in trace.events if e["mono"] >= last and e["subject"] == 2}
    assert took >= set(range(20)) - {2}  # every member heard of the new instance
    assert analyse(trace, scenario).verdict == "pass"
