"""One engine: a scenario file is played as calls on the Cluster a chaos test uses, so the
same faults at the same moments give the same history, whichever way they were written."""

from __future__ import annotations

import pytest
import yaml

from scenarios import open_cluster, parse_scenario
from scenarios.judge.trace import events_digest
from scenarios.play.sim import play_sim

FILE = {
    "name": "every verb",
    "nodes": 5,
    "seed": 4,
    "workload": "off",
    "duration": 40,
    "steps": [
        {"at": 2, "name": "p", "pause": 4, "for": 6},
        {"at": 3, "name": "s", "stop": 3},
        {"at": 5, "name": "l", "kill": "leader"},
        {"at": 9, "name": "n", "add": 2},
        {"at": 12, "name": "cut", "partition": [[1], "rest"]},
        {"at": 15, "name": "lo", "loss": {"node": "all", "percent": 20}},
        {"at": 16, "name": "h", "http": {"node": 2, "path": "/api/health"}},
        {"at": 20, "name": "fix", "heal": True},
        {"at": 22, "name": "r", "restart": 0},
    ],
}


async def test_a_file_and_the_same_calls_give_the_same_history() -> None:
    scenario = parse_scenario(yaml.safe_dump(FILE), "every-verb.yaml", sim=True)
    trace = await play_sim(scenario)
    async with open_cluster(5, mode="sim", seed=4) as c:
        t0 = c.t0
        await c.sleep_until(t0 + 2)
        await c.pause(4, 6, name="p")
        await c.sleep_until(t0 + 3)
        await c.stop(3, name="s")
        await c.sleep_until(t0 + 5)
        await c.kill(await c.leader(), name="l")
        await c.sleep_until(t0 + 9)
        assert await c.add_nodes(2, name="n") == (5, 6)
        await c.sleep_until(t0 + 12)
        await c.partition([1], name="cut")
        await c.sleep_until(t0 + 15)
        await c.loss(20, [i for i in c.nodes if c.state(i) != "down"], name="lo")
        await c.sleep_until(t0 + 16)
        assert await c.http(2, "/api/health", name="h") is None  # sim: no dashboards
        await c.sleep_until(t0 + 20)
        await c.heal(name="fix")
        await c.sleep_until(t0 + 22)
        await c.restart(0, name="r")
        await c.sleep_until(t0 + 40)
        mine = await c.history()
    assert events_digest(mine.trace.events) == events_digest(trace.events)
    steps = [(a.step, a.kind, a.nodes, round(a.t - t0, 6)) for a in mine.trace.actions]
    assert steps == [(a.step, a.kind, a.nodes, round(a.t - trace.t0, 6)) for a in trace.actions]
    assert ("p:resume", "resume", (4,), 8.0) in steps  # the timed pause resumed itself
    http = trace.action("h")
    assert http is not None
    assert http.note == "not applicable in sim"


async def test_the_api_refuses_what_a_file_plays_as_written() -> None:
    async with open_cluster(3, mode="sim", seed=1) as c:
        await c.stop(2)
        assert c.state(2) == "down"
        with pytest.raises(ValueError, match="node 2 is down, not running"):
            await c.stop(2)
    again = dict(FILE, nodes=3, steps=[{"at": 1, "stop": 2}, {"at": 2, "stop": 2}])
    trace = await play_sim(parse_scenario(yaml.safe_dump(again), "twice.yaml", sim=True))
    assert [a.kind for a in trace.actions] == ["stop", "stop"]
