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


def test_a_lone_member_tries_the_other_seeds_a_few_a_period() -> None:
    m = _machine(SEEDS)
    m.join(0.0)
    asked: set[tuple[str, int]] = set()
    now = 0.0
    for _ in range(200):  # nobody answers: still alone, a few seeds a period
        now += m.config.probe_interval
        syncs = [(s.host, s.port) for s in m.tick(now).syncs if s.join]
        assert len(syncs) <= JOIN_SEEDS
        asked |= set(syncs)
    assert asked - set(SEEDS[:JOIN_SEEDS])  # not only the first few
    assert asked <= set(SEEDS)


def test_fewer_seeds_than_the_limit_are_all_asked() -> None:
    out = _machine(SEEDS[:2]).join(0.0)
    assert [(s.host, s.port) for s in out.syncs] == SEEDS[:2]


def test_a_re_join_asks_every_missing_seed_up_to_the_limit() -> None:
    """Found by ``rt_cluster explore`` (tests/scenarios/found/failure-15858.yaml): one seed a
    re-join, drawn at random, kept drawing a killed seed, so a healed partition stayed split
    for several ``rejoin_interval``s, past the bound that counts one."""
    m = _machine(SEEDS[:2])
    m.join(0.0)
    out = m.tick(m.config.probe_interval)  # alone: the first re-join comes one period in
    assert sorted((s.host, s.port) for s in out.syncs if s.join) == SEEDS[:2]
