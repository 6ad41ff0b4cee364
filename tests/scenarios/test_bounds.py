"""Derived bounds: the arithmetic, and the bound checked against the simulation (safe and tight).

The simulation is deterministic per seed, so the 1,000-seed checks below cannot fail by chance:
they fail when the protocol, the simulator or the formula changes so that the bound no longer
holds in 999 of 1,000 runs, or grows beyond twice the measured 99.9th percentile.
"""

from __future__ import annotations

import math
import random

import pytest

from scenarios import find_scenario, load_scenario, parse_scenario, run_scenario
from scenarios.format.bounds import BoundError, _residual, derive, first_probe, spread
from swim import SwimConfig

LOCAL = SwimConfig()


def test_residual_matches_shuffled_round_robin() -> None:
    """S(a): the chance a prober's next probe of one member is more than a passes away."""
    m, rng, trials = 8, random.Random(5), 40_000
    waits = []
    for _ in range(trials):
        here, there = rng.sample(range(m), m), rng.sample(range(m), m)
        u = rng.random() * m  # a random moment within the current pass
        pos = here.index(0)
        waits.append(pos - u if pos > u else (m - u) + there.index(0))
    for a in (0.25, 0.5, 1.0, 1.5):
        seen = sum(w > a * m for w in waits) / trials
        assert abs(seen - _residual(a)) < 0.02, (a, seen, _residual(a))
    assert _residual(0) == 1.0
    assert _residual(2) == 0.0


def test_dead_bound_terms_add_up_and_grow_with_the_cluster() -> None:
    b5 = derive("dead", "kill", 5, LOCAL, real=False)
    terms = dict(b5.terms)
    assert math.isclose(b5.seconds, round(sum(terms.values()), 2))
    assert terms["suspicion (Min)"] == 3.0  # 3 x max(1, log10 5) x 1 s
    assert terms["probe period"] == 1.0
    assert derive("dead", "kill", 30, LOCAL, real=False).seconds > b5.seconds
    real = derive("dead", "kill", 5, LOCAL, real=True)
    assert real.seconds > b5.seconds
    assert "loop lag" in dict(real.terms)
    looser = derive("dead", "kill", 5, LOCAL, real=False, confidence=0.99)
    assert looser.seconds < b5.seconds
    lan = derive("dead", "kill", 5, SwimConfig.lan(), real=False)
    assert dict(lan.terms)["suspicion (Min)"] == 4.0


def test_first_probe_and_spread_quantiles() -> None:
    # n - 1 probers each reach the member within 2 passes: the bound never exceeds that
    assert first_probe(5, 1.0, 1e-9) <= 2 * 4
    assert first_probe(5, 1.0, 0.5) < first_probe(5, 1.0, 0.0005)
    assert spread(30, LOCAL, 0.0005) > spread(5, LOCAL, 0.0005) >= LOCAL.gossip_interval


def test_kinds_without_a_derivation_ask_for_within() -> None:
    with pytest.raises(BoundError, match="give 'within:'"):
        derive("dead", "partition", 5, LOCAL, real=False)
    no_rejoin = SwimConfig.from_mapping({"rejoin_interval": 0})
    with pytest.raises(BoundError, match="heal step"):
        derive("converged", "heal-partition", 5, no_rejoin, real=False)
    text = (
        "nodes: 4\nsteps: [{at: 1, kill: 3, name: k}]\n"
        "expect: [{dead: 3, after: k}, {dead: 3, after: k, within: auto}]\n"
    )
    sc = parse_scenario(text, "t.yaml", sim=True)
    first, second = sc.expectations
    assert first.derived is not None
    assert first.within == first.derived.seconds
    assert second.within == first.within
    real = parse_scenario(text, "t.yaml")
    assert real.expectations[0].within > first.within  # the loop-lag allowance
    assert sc.duration >= 1 + first.within


def _measured(name: str, nodes: int, seeds: range, index: int = 0) -> tuple[float, list[float]]:
    sc = load_scenario(find_scenario(name), nodes=nodes, sim=True)
    e = sc.expectations[index]
    assert e.derived is not None, "the library's bound should be derived"
    values = []
    for seed in seeds:
        results, _ = run_scenario(sc, sim=True, seed=seed)
        m = results["expectations"][index]["measured"]
        values.append(math.inf if m is None else float(m))
    return e.within, sorted(values)


@pytest.mark.parametrize(("name", "nodes"), [("kill_one", 5), ("pause_long", 5), ("kill_one", 8)])
def test_dead_bound_is_safe_and_tight_over_1000_seeds(name: str, nodes: int) -> None:
    """Issue 13: the bound holds in >= 99.9 % of runs and is at most twice the p99.9."""
    bound, values = _measured(name, nodes, range(1000, 2000))
    held = sum(v <= bound for v in values)
    p999 = values[math.ceil(0.999 * len(values)) - 1]
    assert held >= 999, (bound, values[-5:])
    assert bound <= 2 * p999, (bound, p999)


def test_a_healed_partition_converges_within_the_next_re_join() -> None:
    """The heal of a partition is derived from the re-join (rejoin_interval), the two
    spreads and the catch-up push/pull; the heal of loss from Lifeguard's local health."""
    b = derive("converged", "heal-partition", 30, LOCAL, real=False)
    terms = dict(b.terms)
    assert terms["next re-join"] == LOCAL.rejoin_interval
    assert terms["catch-up push/pull"] == 3 * LOCAL.probe_interval
    assert LOCAL.rejoin_interval < b.seconds < LOCAL.rejoin_interval + 10
    loss = derive("converged", "heal-loss", 30, LOCAL, real=False)
    assert "next re-join" not in dict(loss.terms)
    text = (
        "nodes: 4\nsteps: [{at: 1, partition: [[0, 1], rest], name: p},"
        " {at: 30, heal: true, name: h}, {at: 40, loss: {node: all, percent: 5}, name: l},"
        " {at: 50, heal: true, name: h2}]\n"
        "expect: [{converged: true, after: h}, {converged: true, after: h2}]\n"
    )
    after_split, after_loss = parse_scenario(text, "t.yaml", sim=True).expectations
    assert after_split.derived is not None
    assert after_loss.derived is not None
    split = derive("converged", "heal-partition", 4, LOCAL, real=False)
    assert after_split.within == split.seconds
    assert after_loss.within == derive("converged", "heal-loss", 4, LOCAL, real=False).seconds
