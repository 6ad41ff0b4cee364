"""The initial join asks a few seeds, not every one (resync rule 5): with every seed, node k of
a cluster launched in order made k full-state exchanges and 250 nodes took 203 s to start. The
seeds are the whole hostfile, so a member that comes back while some are down still finds the
live ones (rule 2)."""

from __future__ import annotations

import random

from swim import SimNetwork, SwimConfig, SwimMachine
from swim.members import MemberState
from swim.resync import JOIN_SEEDS, SCAN_MAX
from swim.wire import StateEntry

SEEDS = [("127.0.0.1", 7000 + i) for i in range(40)]


def _machine(seeds: list[tuple[str, int]], node_id: int = 99) -> SwimMachine:
    return SwimMachine(
        SwimConfig(), node_id, "127.0.0.1", 6999, rng=random.Random(1), now=0.0, seeds=seeds
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


def test_our_own_entry_in_the_hostfile_is_never_asked() -> None:
    me = ("127.0.0.1", 6999)
    m = _machine([me, *SEEDS[:2]])
    assert [(s.host, s.port) for s in m.join(0.0).syncs] == SEEDS[:2]
    now = 0.0
    for _ in range(20):
        now += m.config.probe_interval
        assert me not in [(s.host, s.port) for s in m.tick(now).syncs]
    alone = _machine([me])  # a hostfile naming only us: no seed, no re-join
    assert not alone.join(0.0).syncs
    assert not alone.tick(100.0).syncs


MANY = [("127.0.0.1", 10000 + i) for i in range(1000)]


def test_above_the_scan_limit_a_re_join_draws_a_few_missing_seeds() -> None:
    """Rule 2 at 1,000 entries: a lone member asks ``JOIN_SEEDS`` distinct seeds a period, and
    over a few periods many different ones (a restarted member finds whoever lives)."""
    assert len(MANY) > SCAN_MAX
    m = _machine(MANY)
    m.join(0.0)
    asked: set[tuple[str, int]] = set()
    now = 0.0
    for _ in range(30):
        now += m.config.probe_interval
        syncs = [(s.host, s.port) for s in m.tick(now).syncs if s.join]
        assert len(syncs) == len(set(syncs)) == JOIN_SEEDS
        asked |= set(syncs)
    assert len(asked) > 60


def test_a_member_holding_every_seed_up_asks_none() -> None:
    """Rule 2's cost at rest: with every entry of a 1,000-line hostfile held up, the re-joins
    every ``rejoin_interval`` ask nobody."""
    m = _machine(MANY, node_id=5000)
    m.preload(StateEntry(i, h, p, 0, MemberState.ALIVE, 1) for i, (h, p) in enumerate(MANY))
    now, joins = 0.0, 0
    while now < 3 * m.config.rejoin_interval:
        now += m.config.probe_interval
        joins += sum(s.join for s in m.tick(now).syncs)
    assert joins == 0


def test_a_restarted_member_whose_first_seeds_are_down_finds_the_live_ones() -> None:
    """tests/scenarios/found/failure-464.yaml: nodes 1 and 2 killed, node 0 restarted. With
    the simulator's old seeds (nodes 0-2) node 0 stayed alone until node 3's push/pull, 44 s
    later; its hostfile names node 3, so it asks it within a period or two."""
    net = SimNetwork(4, seed=464, bootstrap=False)
    assert net.until(lambda: all(len(net.members(i)) == 4 for i in net.ids()), timeout=30)
    net.kill(1)
    net.kill(2)
    net.run_for(2.0)
    net.restart(0)
    t0 = net.now
    assert net.until(lambda: net.state(0, 3) == "alive", timeout=30)
    assert net.now - t0 <= 3 * net.config.probe_interval


def test_a_node_added_while_the_first_nodes_are_down_joins_the_rest() -> None:
    net = SimNetwork(6, seed=9)
    for i in (0, 1, 2):
        net.kill(i)
    new = net.add()
    t0 = net.now
    assert net.until(
        lambda: (
            all(net.state(new, j) == "alive" for j in (3, 4, 5))
            and all(net.state(j, new) == "alive" for j in (3, 4, 5))
        ),
        timeout=30,
    )
    assert net.now - t0 <= 3 * net.config.probe_interval
