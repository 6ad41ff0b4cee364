"""A table started from a shared roster (``table`` rule 4) and the lazy probe order (rule 2):
the same member table as one built row by row, isolated per machine, and push/pulls that
carry only the rows that differ merge to the same table as whole states."""

from __future__ import annotations

import random

import pytest

from swim import MemberState, SimNetwork, SwimConfig, SwimMachine
from swim.simsync import SyncState as _State
from swim.table import Entry, MemberTable, Roster
from swim.wire import StateEntry, Suspect, encode

N = 40


def _rows(n: int) -> list[Entry]:
    return [Entry(i, f"10.0.0.{i}", 7946, 0, MemberState.ALIVE, 1000 + i, 0.0) for i in range(n)]


def _tables(n: int, seed: int) -> tuple[MemberTable, MemberTable]:
    """Member 0's table built from a roster, and one built by adding every row."""
    roster = Roster(_rows(n))
    a = MemberTable(_rows(1)[0], random.Random(seed), roster)
    b = MemberTable(_rows(1)[0], random.Random(seed))
    for e in _rows(n)[1:]:
        b.add(e)
    return a, b


def test_a_roster_table_reads_as_a_table_built_row_by_row() -> None:
    a, b = _tables(N, 1)
    assert len(a) == len(b) == N
    assert a.up_count == b.up_count == N
    assert a.snapshot() == b.snapshot()
    for i in range(N):
        assert i in a
        assert a.id_at(f"10.0.0.{i}", 7946) == i
    assert N not in a
    assert a.id_at("10.0.0.99", 7946) is None
    assert len(a.own_ids()) == 1  # nothing copied in by reading


def test_a_row_changed_in_one_table_stays_out_of_the_roster_and_the_others() -> None:
    net = SimNetwork(6, seed=3)
    e = net.machine(0).table.get(4)
    assert e is not None
    e.state = MemberState.DEAD
    assert net.state(0, 4) == "dead"
    assert all(net.state(i, 4) == "alive" for i in (1, 2, 3, 5))
    assert net.machine(1).table.roster[4].state is MemberState.ALIVE


@pytest.mark.parametrize("roster", [True, False])
def test_each_pass_probes_every_up_member_once_and_a_newcomer_within_it(roster: bool) -> None:
    a, b = _tables(N, 7)
    t = a if roster else b
    for _ in range(3):
        seen = [t.next_probe_target() for _ in range(N - 1)]
        assert sorted(e.node_id for e in seen if e is not None) == list(range(1, N))
    first = [t.next_probe_target() for _ in range(5)]
    t.add(Entry(N, "10.0.1.1", 7946, 0, MemberState.ALIVE, 1, 0.0))
    rest = [t.next_probe_target() for _ in range(N - 5)]
    ids = [e.node_id for e in first + rest if e is not None]
    assert sorted(ids) == list(range(1, N + 1))


def test_a_member_down_when_drawn_is_probed_once_it_is_back_within_the_pass() -> None:
    t, _ = _tables(N, 11)
    drawn = [t.next_probe_target() for _ in range(N // 2)]
    victim = t.get(drawn[0].node_id)  # type: ignore[union-attr]
    assert victim is not None
    victim.state = MemberState.DEAD
    t.note_transition(victim, MemberState.ALIVE)
    victim.state = MemberState.ALIVE
    t.note_transition(victim, MemberState.DEAD)
    rest = [t.next_probe_target() for _ in range(N - 1 - N // 2 + 1)]
    assert victim.node_id in [e.node_id for e in rest if e is not None]


def _changed(net: SimNetwork, rng: random.Random) -> None:
    """Change some rows of members 0 and 1 in the ways gossip does."""
    for i in (0, 1):
        m = net.machine(i)
        for j in rng.sample(range(2, 20), 6):
            e = m.table.get(j)
            assert e is not None
            kind = rng.randrange(3)
            if kind == 0:
                m.membership.apply(Suspect(0, j, 1 - i), "gossip", net.now)
            elif kind == 1:
                e.incarnation += rng.randrange(1, 3)
            else:
                m.membership.set_state(e, MemberState.DEAD, "gossip", net.now)


@pytest.mark.parametrize("seed", range(8))
def test_a_push_pull_of_the_differing_rows_merges_like_the_whole_state(seed: int) -> None:
    nets = [SimNetwork(20, seed=seed, record_events=False) for _ in range(2)]
    for net in nets:
        _changed(net, random.Random(seed))
    delta = _State.of(nets[0].machine(0)).rows_for(nets[0].machine(1).table)
    assert len(delta) < 20
    nets[0].machine(1).merge_state(delta, 1.0, peer=0)
    nets[1].machine(1).merge_state(nets[1].machine(0).local_state(), 1.0, peer=0)
    a, b = nets[0].machine(1), nets[1].machine(1)
    assert a.members() == b.members()
    assert [e.suspicion for e in a.table] == [e.suspicion for e in b.table]


def test_a_machine_without_the_roster_gets_the_whole_state() -> None:
    net = SimNetwork(20, seed=5)
    new = SwimMachine(SwimConfig(), 99, "10.9.9.9", 7946, rng=random.Random(1), now=0.0)
    rows = _State.of(net.machine(0)).rows_for(new.table)
    assert sorted(r.node for r in rows) == list(range(20))
    assert all(isinstance(r, StateEntry) for r in rows)


def test_building_a_large_network_copies_no_rows() -> None:
    net = SimNetwork(5000, seed=1, record_events=False)
    assert all(len(net.machine(i).table.own_ids()) == 1 for i in (0, 2500, 4999))
    assert len(net.machine(7).table) == 5000


def test_two_members_holding_a_member_dead_do_not_answer_each_other_for_ever() -> None:
    """``membership`` rule 3: a confirmation per period per asker, not per packet. Unpaced,
    two such members answered each other a packet per network delay: 450,000 of the 530,000
    packets of a 1,000-node ``kill_one``."""
    net = SimNetwork(3, seed=2)
    net.run_for(2.0)
    net.kill(2)
    assert net.until(lambda: all(net.state(i, 2) == "dead" for i in (0, 1)), 60.0)
    net.run_for(30.0)  # every rumour spent
    inc = net.machine(0).table.get(2).incarnation  # type: ignore[union-attr]
    before = net.packets
    net.inject(1, encode(Suspect(inc, 2, 0)), net.address(0))
    net.run_for(10.0)
    # Ten periods of two members probing each other are about 40 packets; the storm was a
    # packet per network delay, thousands.
    assert net.packets - before < 80
