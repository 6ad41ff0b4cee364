"""The initial join asks a few seeds, not every one (resync rule 5): with every seed, node k of
a cluster launched in order made k full-state exchanges and 250 nodes took 203 s to start."""

from __future__ import annotations

import random

from swim import SwimConfig, SwimMachine
from swim.resync import JOIN_SEEDS

SEEDS = [("127.0.0.1", 7000 + i) for i in range(40)]


def _machine(seeds: list[tuple[str, int]]) -> SwimMachine:
    return SwimMachine(
        SwimConfig(), 99, "127.0.0.1", 6999, rng=random.Random(1), now=0.0, seeds=seeds
    )


def test_the_join_pushes_and_pulls_with_the_first_seeds_only() -> None:
    out = _machine(SEEDS).join(0.0)
    asked = [(s.host, s.port) for s in out.syncs]
    assert asked == SEEDS[:JOIN_SEEDS]
    assert all(s.join for s in out.syncs)


def test_a_lone_member_tries_the_other_seeds_one_a_period() -> None:
    m = _machine(SEEDS)
    m.join(0.0)
    asked: set[tuple[str, int]] = set()
    now = 0.0
    for _ in range(200):  # nobody answers: still alone, a seed a period
        now += m.config.probe_interval
        asked |= {(s.host, s.port) for s in m.tick(now).syncs if s.join}
    assert asked - set(SEEDS[:JOIN_SEEDS])  # not only the first few
    assert asked <= set(SEEDS)


def test_fewer_seeds_than_the_limit_are_all_asked() -> None:
    out = _machine(SEEDS[:2]).join(0.0)
    assert [(s.host, s.port) for s in out.syncs] == SEEDS[:2]
