"""rt_cluster explore draws one-way cuts and clock faults (``--faults`` chooses the kinds), judges
them (``cut_accuracy``, bounds slowed by a slow clock), shrinks them, and finds the two planted
bugs only these kinds reveal."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from bench.explore.plants import planted
from scenarios import load_scenario, run_scenario
from scenarios.explore import Options, Search, draw, run_search
from scenarios.explore.drawing import FAULT_KINDS, MAX_JUMP_S, parse_faults
from scenarios.explore.playing import scenario_of
from scenarios.explore.shrinking import candidates
from scenarios.format.records import Bound
from scenarios.judge.checks import _slowed
from scenarios.judge.cuts import cut_edges, has_route, slowest_rate
from scenarios.judge.trace import Action
from tests.support.clusters import run_main

OLD_KINDS = ("kill", "pause", "restart", "add", "partition", "loss", "delay", "rolling")


def _kinds(options: Options, runs: int = 300) -> set[str]:
    return {
        k
        for seed in range(runs)
        for step in draw(seed, options)["steps"]
        for k in step
        if k not in ("at", "name", "for")
    }


def test_faults_are_parsed_in_their_own_order_and_unknown_kinds_refused() -> None:
    assert parse_faults("clock,cut") == ("cut", "clock")
    assert parse_faults(" kill , cut ") == ("kill", "cut")
    assert set(FAULT_KINDS) == {*OLD_KINDS, "cut", "clock"}
    for bad in ("cut,bogus", "", "cut,,kill", "CUT"):
        with pytest.raises(ValueError, match="unknown kind"):
            parse_faults(bad)


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--faults", "cut,bogus"], "unknown kind 'bogus'"),
        (["--faults", ""], "unknown kind ''"),
    ],
)
def test_a_bad_faults_list_exits_2_with_one_line(
    args: list[str], said: str, tmp_path: Path
) -> None:
    code, _, err = run_main("explore", "--runs", "1", "--out", str(tmp_path), *args)
    assert code == 2
    assert said in err
    assert len(err.strip().splitlines()) <= 3


def test_the_new_kinds_are_drawn_by_default_and_only_the_kinds_asked_for() -> None:
    assert {"cut", "clock"} <= _kinds(Options())
    assert _kinds(Options(faults=("cut",))) == {"cut", "heal"}
    assert _kinds(Options(faults=("clock",))) == {"clock", "kill", "restart", "heal"}
    assert not {"cut", "clock"} & _kinds(Options(faults=OLD_KINDS))


def test_cuts_and_clocks_are_drawn_within_their_ranges_as_a_pure_function_of_the_seed() -> None:
    offsets, rates = [], []
    for seed in range(300):
        m = draw(seed, Options(3, 6, faults=("cut", "clock")))
        assert m == draw(seed, Options(3, 6, faults=("cut", "clock")))
        scenario_of(m)  # the format takes it
        for step in m["steps"]:
            if "cut" in step:
                src, dst = step["cut"]["from"], step["cut"]["to"]
                assert src
                assert dst
                assert not set(src) & set(dst)
            if "clock" in step:
                offsets.append(step["clock"]["offset"])
                rates.append(step["clock"]["rate"])
                assert abs(step["clock"]["offset"]) <= MAX_JUMP_S
                assert 0.5 <= step["clock"]["rate"] <= 2.0
    assert min(offsets) < -3000
    assert max(offsets) > 3000
    assert min(rates) < 0.7
    assert max(rates) > 1.5


def test_a_cut_and_a_clock_shrink_to_weaker_ones() -> None:
    m = {
        "nodes": 4,
        "steps": [
            {"at": 3.0, "cut": {"from": [0, 1], "to": [2]}},
            {"at": 4.0, "clock": {"node": 3, "offset": -600.0, "rate": 0.5}},
            {"at": 9.0, "heal": True, "name": "final"},
        ],
    }
    steps = [c["steps"] for c in candidates(m)]
    firsts = [s[0] for s in steps]
    assert {"at": 3.0, "cut": {"from": [1], "to": [2]}} in firsts
    assert {"at": 3.0, "cut": {"from": [0], "to": [2]}} in firsts
    clocks = [s[1]["clock"] for s in steps if len(s) == 3 and "clock" in s[1]]
    assert {"node": 3, "offset": -300.0, "rate": 0.5} in clocks
    assert {"node": 3, "offset": -600.0, "rate": 0.75} in clocks
    assert {**m, "nodes": 3} not in list(candidates(m))  # node 3 is named: it stays


def test_a_route_needs_a_helper_every_draw_finds() -> None:
    cut = cut_edges(Action(1.0, "cut", "cut1", (0,), ((0,), (1,))))
    assert cut == {(0, 1)}
    assert has_route(0, 1, range(3), cut, 1)  # node 2 helps both ways
    assert has_route(0, 2, range(3), cut, 1)  # direct
    assert not has_route(0, 1, range(2), cut, 1)  # no helper at all
    two = cut | {(2, 1)}
    assert not has_route(0, 1, range(4), two, 1)  # the one helper drawn may be node 2
    assert has_route(0, 1, range(4), two, 3)  # three helpers drawn: node 3 among them


def test_a_slow_clock_stretches_the_bounds_counted_while_it_runs() -> None:
    from scenarios.judge.trace import Trace

    trace = Trace("sim", 0.0, 30.0, (0, 1, 2), [])
    trace.actions = [
        Action(2.0, "clock", "clock1", (1,), value=-60.0, rate=0.5),
        Action(9.0, "heal", "heal2"),
        Action(12.0, "clock", "clock3", (2,), rate=2.0),
    ]
    assert slowest_rate(trace, 1.0) == 0.5  # set after, before the heal
    assert slowest_rate(trace, 5.0) == 0.5
    assert slowest_rate(trace, 10.0) == 1.0  # healed; a fast clock keeps the bound
    b = _slowed(Bound(4.0, 0.999, (("a", 4.0),), "x"), 0.5)
    assert b.seconds == 8.0
    assert b.terms[-1] == ("clock rate", 4.0)


def _found(plant: str, faults: tuple[str, ...], tmp_path: Path, runs: int) -> dict:
    lines: list[str] = []
    with planted(plant):
        search = Search(Options(faults=faults), runs=runs, seed=1, out=tmp_path)
        assert run_search(search, say=lines.append) == 1, lines
        files = sorted(tmp_path.glob("failure-*.yaml"))
        data = yaml.safe_load(files[0].read_text())
        results, _ = run_scenario(load_scenario(files[0], sim=True), sim=True)
        assert results["property"]["status"] == "fail"
    results, _ = run_scenario(load_scenario(files[0], sim=True), sim=True)  # the bug removed
    assert results["property"]["status"] == "pass", results["property"]
    return data


@pytest.mark.python_swim
def test_an_indirect_ack_sent_around_the_helper_is_found_by_cuts(tmp_path: Path) -> None:
    data = _found("direct_answer", ("cut",), tmp_path, 40)
    assert data["property"] == "cut_accuracy"
    assert any("cut" in s for s in data["steps"])


@pytest.mark.python_swim
def test_an_older_boot_ignored_is_found_by_clock_jumps(tmp_path: Path) -> None:
    data = _found("older_boot_ignored", ("clock",), tmp_path, 40)
    assert data["property"] == "convergence"
    assert any("clock" in s and s["clock"]["offset"] < 0 for s in data["steps"])


def test_the_docs_example_of_a_search_of_cuts_and_clocks_passes(tmp_path: Path) -> None:
    """docs/explore.md, "Cuts and clocks": the unmutated protocol passes 200 runs of them."""
    code, out, err = run_main(
        "explore", "--faults", "cut,clock", "--runs", "200", "--out", str(tmp_path)
    )
    assert code == 0, out + err
    drawn = next(line for line in out.splitlines() if line.startswith("drawn: steps"))
    assert "cut x" in drawn
    assert "clock x" in drawn
    assert "partition" not in drawn
    assert "no property violated" in out


async def test_a_cut_explains_the_suspicions_it_causes_and_no_others() -> None:
    """A node that sends to no one is held dead, expected (``suspicions`` rule 2); a cut that
    leaves every route open accuses no one."""
    from scenarios.judge.checks import never_dead
    from scenarios.play.opening import open_cluster

    async with open_cluster(4, mode="sim", seed=3) as c:
        await c.wait_converged()
        await c.cut(0, 1)
        await c.sleep(30)
        h = await c.history()
        assert not h.accusations
        await c.cut(0, [2, 3])
        await c.sleep(30)
        h = await c.history()
        assert h.accusations
        assert {a.reason for a in h.accusations} == {"cut"}
        assert (await c.check(never_dead())).ok
