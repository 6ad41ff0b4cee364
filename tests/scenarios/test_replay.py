"""What a failed chaos test leaves: a scenario file that replays it, event for event in sim,
and the runner's report; a closed cluster keeps its history."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scenarios import Verdict, analyse, checks, load_scenario, open_cluster
from scenarios.play.realcluster import changed_settings
from scenarios.play.sim import play_sim
from scenarios.replay import scenario_of, write_failure
from swim import SwimConfig


async def test_the_scenario_file_replays_the_test_event_for_event(tmp_path: Path) -> None:
    async with open_cluster(4, mode="sim", seed=3, swim={"rejoin_interval": 5.0}) as c:
        await c.kill(2)
        await c.wait_dead(2)
        await c.partition([0], [1, 3])
        await c.wait_dead(0, by=[1, 3], within=30)
        await c.heal()
        await c.wait_converged()
        await c.loss(20, nodes=[1, 3])
        await c.sleep(5)
        await c.heal()
        await c.wait_converged()
        with pytest.raises(RuntimeError, match="still open"):
            c.final_history()
    failure = write_failure(c, tmp_path / "out", "replayed")
    data = yaml.safe_load(failure.scenario.read_text())
    assert data["swim"] == {"rejoin_interval": 5.0}
    assert [s["name"] for s in data["steps"]] == [
        "kill1",
        "partition2",
        "heal3",
        "loss4",
        "loss4.1",
        "heal5",
    ]
    assert data["expect"][0] == {"never_dead": "all"}
    assert data["expect"][2]["seen_by"] == [1, 3]
    assert (tmp_path / "out" / "report.html").read_text().count("kill1") >= 1
    assert (tmp_path / "out" / "results.json").is_file()

    scenario = load_scenario(failure.scenario, sim=True)
    trace = await play_sim(scenario)
    assert analyse(trace, scenario).verdict == "pass"
    mine = c.final_history().trace
    assert [e for e in trace.events if e["mono"] <= mine.end] == mine.events
    assert len(mine.events) > 20


async def test_a_failed_wait_is_replayed_as_a_failing_expectation(tmp_path: Path) -> None:
    async with open_cluster(3, mode="sim", seed=1) as c:
        await c.kill(2)
        with pytest.raises(AssertionError):
            await c.wait_dead(1)
    data = scenario_of(c)
    last = data["expect"][-1]
    assert set(last) == {"dead", "within"}  # no step on node 1: counted from the start
    assert last["dead"] == 1
    assert last["within"] > 5
    scenario = load_scenario(write_failure(c, tmp_path).scenario, sim=True)
    verdicts = [e["status"] for e in analyse(await play_sim(scenario), scenario).expectations]
    assert verdicts == ["pass", "fail"]


async def test_the_checks_a_test_ran_are_replayed_with_their_verdicts(tmp_path: Path) -> None:
    async with open_cluster(3, mode="sim", seed=4) as c:
        await c.kill(2)
        await c.wait_dead(2)
        mine = await c.check(
            checks.dead(2, by=[0]),
            checks.dead(1, within=3),  # node 1 was never killed: fails
            checks.max_false_suspicions(0),
            checks.max_false_suspicions(0, nodes=[0]),  # the file cannot say "of node 0 only"
            lambda h: Verdict("my own", True),  # nor a user's own function
        )
    assert [v.ok for v in mine.verdicts] == [True, True, False, True, True, True]
    data = scenario_of(c)
    assert data["expect"][2:] == [
        {
            "dead": 2,
            "seen_by": [0],
            "after": "kill1",
            "within": round(mine.verdicts[1].bound or 0, 3),
        },
        {"dead": 1, "within": 3.0},
        {"max_false_suspicions": 0},
    ]
    scenario = load_scenario(write_failure(c, tmp_path).scenario, sim=True)
    replayed = [e["status"] for e in analyse(await play_sim(scenario), scenario).expectations]
    assert replayed == ["pass", "pass", "pass", "fail", "pass"]


async def test_a_closed_cluster_still_answers_for_its_history() -> None:
    async with open_cluster(3, mode="sim", seed=2) as c:
        await c.kill(0)
        await c.wait_dead(0)
    assert c.closed
    events = await c.events()
    assert any(e["subject"] == 0 and e["new"] == "dead" for e in events)
    assert (await c.check()).ok


def test_only_the_changed_swim_settings_go_to_the_nodes() -> None:
    assert changed_settings(SwimConfig()) == {}
    config = SwimConfig.from_mapping({"probe_interval": 0.5, "rejoin_interval": 5.0})
    assert changed_settings(config) == {"probe_interval": 0.5, "rejoin_interval": 5.0}
