"""open_cluster(mode="sim"): every call of the chaos API on the simulated network, in virtual
time; waits, their bounds and timeout messages; views, events, checks; replay from a seed."""

from __future__ import annotations

from typing import Any

import pytest
import trio

import scenarios
from cluster.local import BadInput, netns
from scenarios import Cluster, History, Verdict, WaitTimeout, checks, open_cluster
from scenarios.play.sim import run_sim
from scenarios.play.simcluster import SimBackend
from swim import SwimConfig

STATES = {"alive", "suspect", "dead", "left"}


async def test_kill_is_seen_dead_within_the_derived_bound() -> None:
    async with open_cluster(3, mode="sim", seed=3) as c:
        assert (c.mode, c.seed, c.nodes, c.running) == ("sim", 3, [0, 1, 2], [0, 1, 2])
        assert c.dashboard_url(0) is None
        await c.kill(2)
        waited = await c.wait_dead(2)
        bound = checks.bound_for("dead", c.actions[0], c.trace(), c.config, real=False)
        assert 0 < waited <= bound.seconds
        views = await c.views()
        assert set(views) == {0, 1}
        assert views[0][2] == views[1][2] == "dead"
        result = await c.check(checks.dead(2), checks.never_dead([0, 1]))
        assert result.ok, result.report
        assert result.failures == []
        assert "kill1: 2" in result.report
        assert "node 0 sees 2 dead" in result.report
        assert "node 0 sees 2 suspect" in result.report
        assert "probe_failed" not in result.report  # the API's words: a missed probe is no news


async def test_views_and_events_use_the_api_vocabulary() -> None:
    async with open_cluster(4, mode="sim", seed=5) as c:
        await c.pause(3)
        await c.wait_dead(3)
        views = await c.views()
        assert set(views) == {0, 1, 2}  # a paused node is not running, so not an observer
        for row in views.values():
            assert all(isinstance(s, int) for s in row)
            assert set(row.values()) <= STATES
        events = await c.events()
        assert events, "a pause long enough to be declared dead leaves events"
        for e in events:
            assert set(e) == {"observer", "subject", "old", "new", "cause", "t"}
            assert e["new"] in STATES
            assert e["old"] in (STATES | {None})
            assert e["old"] != e["new"]
        assert any(e["subject"] == 3 and e["new"] == "dead" and e["t"] > 0 for e in events)
        await c.resume(3)
        await c.wait_alive(3)
        await c.wait_converged()
        result = await c.check(checks.alive(3), checks.converged())
        assert result.ok, result.report  # the deaths of a paused node are expected, not false


async def test_a_60s_wait_costs_little_wall_time() -> None:
    async with open_cluster(5, mode="sim", seed=1) as c:
        t = c.backend.now()
        began = trio.current_time()
        await c.sleep(60.0)
        assert c.backend.now() == pytest.approx(t + 60.0)
        # Virtual: the 60 seconds passed on the simulated clock, not on the real one (how
        # little real time they cost is bench.sim's figure, not a test's).
        assert trio.current_time() - began < 60.0
        await c.wait_converged()


async def test_timeout_says_who_sees_what() -> None:
    async with open_cluster(3, mode="sim", seed=2) as c:
        await c.partition([0], [1, 2])
        await c.wait_dead(0, by=[1, 2], within=30)
        with pytest.raises(WaitTimeout) as caught:
            await c.wait_alive(0, by=[1], within=5)
        text = str(caught.value)
        assert "node 0 seen alive by 1" in text
        assert "node 1 sees 0 dead" in text
        assert "not within 5 s" in text
        assert "seed 2" in text
        assert "mode sim" in text


async def test_default_bound_is_derived_and_named_in_the_timeout() -> None:
    async with open_cluster(3, mode="sim", seed=4) as c:
        await c.kill(2)
        with pytest.raises(WaitTimeout) as caught:
            await c.wait_dead(1)  # nothing happened to node 1: the fallback bound, then fail
        text = str(caught.value)
        assert "no bound derived here" in text
        assert "node 0 sees 1 alive" in text
        await c.restart(2)
        await c.wait_converged()  # derived from restart2
        assert c.running == [0, 1, 2]


async def test_add_partition_heal_loss_delay() -> None:
    async with open_cluster(3, mode="sim", seed=6) as c:
        new = await c.add()
        assert new == 3
        assert c.nodes == [0, 1, 2, 3]
        await c.wait_alive(3)
        await c.partition([0, 1])  # the rest, {2, 3}, is the other group
        assert c.actions[-1].groups == ((0, 1), (2, 3))
        await c.wait_dead(2, by=[0, 1], within=30)
        await c.heal()
        await c.wait_converged()
        await c.loss(10, nodes=[0])
        await c.delay(20)
        assert c.actions[-1].nodes == (0, 1, 2, 3)
        await c.sleep(10)
        await c.heal()
        await c.wait_converged()
        result = await c.check(checks.converged(), checks.max_false_suspicions(0))
        assert result.ok, result.report


async def test_refused_inputs(monkeypatch: pytest.MonkeyPatch) -> None:
    async with open_cluster(3, mode="sim", seed=0) as c:
        with pytest.raises(ValueError, match="no node 9"):
            await c.kill(9)
        with pytest.raises(ValueError, match="two groups"):
            await c.partition([0, 1], [1, 2])
        with pytest.raises(ValueError, match="percentage"):
            await c.loss(120)
        with pytest.raises(ValueError, match="node 1 is running, not paused"):
            await c.resume(1)
        assert c.actions == []
        await c.kill(1)
        with pytest.raises(ValueError, match="node 1 is down, not running or paused"):
            await c.kill(1)
        with pytest.raises(ValueError, match="node 1 is down, not running"):
            await c.pause(1)
        assert c.state(1) == "down"
        await c.restart(1)
        assert c.state(1) == "running"
    with pytest.raises(ValueError, match="mode"):
        await scenarios.start_cluster(3, mode="cloud")
    monkeypatch.setattr(netns, "privileged", lambda: False)
    with pytest.raises(BadInput, match="mode 'netns' needs root"):
        await scenarios.start_cluster(3, mode="netns")
    with pytest.raises(ValueError, match=r"1\.\.1024"):
        await scenarios.start_cluster(0)


async def test_a_failing_checker_fails_the_check() -> None:
    async with open_cluster(3, mode="sim", seed=8) as c:
        await c.sleep(5)
        result = await c.check(checks.dead(1, within=3))
        assert not result.ok
        assert len(result.failures) == 1
        assert "node 1 seen dead" in result.failures[0]
        assert result.failures[0].startswith("FAIL")


async def test_a_user_checker_is_a_function_of_the_history() -> None:
    def few_events(h: History) -> Verdict:
        n = len(h.trace.events)
        return Verdict("fewer than 5 events", n < 5, float(n))

    async with open_cluster(3, mode="sim", seed=9) as c:
        await c.kill(0)
        await c.wait_dead(0)
        result = await c.check(few_events)
        assert not result.ok
        assert result.failures[0].startswith("FAIL: fewer than 5 events")


async def _body(c: Cluster) -> list[dict[str, Any]]:
    await c.kill(1)
    await c.wait_dead(1)
    await c.partition([0], [2, 3])
    await c.sleep(8)
    await c.heal()
    await c.wait_converged()
    await c.restart(1)
    await c.wait_converged()
    return await c.events()


async def test_one_seed_replays_the_same_history_event_for_event() -> None:
    runs = []
    for _ in range(2):
        async with open_cluster(4, mode="sim", seed=11) as c:
            runs.append(await _body(c))
    assert len(runs[0]) > 10
    assert runs[0] == runs[1]
    async with open_cluster(4, mode="sim", seed=12) as c:
        assert await _body(c) != runs[0]


async def test_without_a_seed_one_is_chosen_and_replays() -> None:
    async with open_cluster(3, mode="sim") as c:
        seed = c.seed
        first = await _body_small(c)
    async with open_cluster(3, mode="sim", seed=seed) as c:
        assert await _body_small(c) == first


async def _body_small(c: Cluster) -> list[dict[str, Any]]:
    await c.kill(2)
    await c.wait_dead(2)
    return await c.events()


def test_yaml_expectations_and_checkers_judge_alike() -> None:
    path = scenarios.find_scenario("kill_one")
    scenario = scenarios.load_scenario(path, sim=True, nodes=5)
    trace = run_sim(scenario, seed=1)
    analysed = scenarios.analyse(trace, scenario)
    history = History.of(trace, SwimConfig.from_mapping(scenario.swim))
    assert len(scenario.expectations) == 2
    for e, row in zip(scenario.expectations, analysed.expectations, strict=False):
        verdict = checks.expectation(e)(history)
        assert verdict.ok == (row["status"] == "pass")
        assert verdict.measured == row["measured"]


async def test_a_wait_counts_from_the_last_action_on_its_node() -> None:
    async with open_cluster(3, mode="sim", seed=13) as c:
        await c.kill(2)
        await c.wait_dead(2)
        await c.restart(2)
        await c.wait_converged()
        await c.sleep(30)  # the kill's bound is long past
        await c.partition([2])
        waited = await c.wait_dead(2)  # bounded from partition3, not from kill1
        assert waited > 0
        assert c.actions[-1].step == "partition3"


class _Steps(trio.abc.Instrument):
    """Counts the steps of one task: each is a yield to trio and back."""

    def __init__(self, task: trio.lowlevel.Task) -> None:
        self.task, self.steps = task, 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += task is self.task


async def test_a_sim_wait_reads_the_views_at_hand_and_yields_once_per_look(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    looks: list[list[int]] = []
    asked: list[list[int]] = []
    original = SimBackend.views_nowait

    def at_hand(self: SimBackend, observers: list[int]) -> dict[int, dict[int, str] | None]:
        looks.append(list(observers))
        return original(self, observers)

    async def views(self: SimBackend, observers: list[int]) -> dict[int, dict[int, str] | None]:
        asked.append(list(observers))
        return original(self, observers)

    monkeypatch.setattr(SimBackend, "views_nowait", at_hand)
    monkeypatch.setattr(SimBackend, "views", views)
    async with open_cluster(3, mode="sim", seed=4) as c:
        await c.kill(2)
        steps = _Steps(trio.lowlevel.current_task())
        trio.lowlevel.add_instrument(steps)
        try:
            await c.wait_dead(2)
        finally:
            trio.lowlevel.remove_instrument(steps)
        assert len(looks) > 20  # seconds of virtual time, a look every 50 ms
        assert asked == []
        assert steps.steps <= len(looks) + 1  # one yield per look (rule 6 of waits)
        assert looks[-1] == [0, 1]


async def test_a_task_beside_a_sim_wait_runs_between_its_looks() -> None:
    async with open_cluster(3, mode="sim", seed=5) as c, trio.open_nursery() as nursery:
        killed = trio.Event()

        async def kill_soon() -> None:
            await c.sleep(1.0)
            await c.kill(2)
            killed.set()

        nursery.start_soon(kill_soon)
        await c.wait_dead(2, within=60.0)  # waits on, polling, while the other task kills
        assert killed.is_set()
        assert c.state(2) == "down"


async def test_who_is_there_is_worked_out_once_per_action(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with open_cluster(3, mode="sim", seed=6) as c:
        await c.kill(2)
        traced: list[float | None] = []
        original = Cluster.trace

        def trace(self: Cluster, events: Any = None, end: float | None = None) -> Any:
            traced.append(end)
            return original(self, events, end)

        monkeypatch.setattr(Cluster, "trace", trace)
        waited = await c.wait_dead(2)
        assert waited > 2.0  # dozens of looks
        assert len(traced) <= 2  # the wait's bound, and who is up after the kill
        assert c.running == [0, 1]
        assert c.nodes == [0, 1, 2]
        await c.restart(2)
        assert c.running == [0, 1, 2]
