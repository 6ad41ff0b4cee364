"""SwimConfig defaults, profiles and from_mapping validation; Lifeguard arithmetic; queue."""

from __future__ import annotations

import math
import random

import pytest

from swim import SwimConfig
from swim.broadcast import BroadcastQueue, retransmit_limit
from swim.lifeguard import Awareness, Suspicion, suspicion_bounds


def test_defaults_are_memberlist_local_profile() -> None:
    c = SwimConfig()
    assert (c.probe_interval, c.probe_timeout, c.indirect_checks) == (1.0, 0.2, 1)
    assert (c.suspicion_mult, c.suspicion_max_timeout_mult, c.retransmit_mult) == (3, 6, 2)
    assert (c.gossip_interval, c.gossip_nodes) == (0.1, 3)
    assert (c.pushpull_interval, c.gossip_to_the_dead_time, c.awareness_max) == (15.0, 15.0, 8)
    assert (c.max_members, c.new_members_per_period) == (65536, 64)
    lan = SwimConfig.lan()
    assert (lan.probe_timeout, lan.indirect_checks, lan.suspicion_mult) == (0.5, 3, 4)


def test_from_mapping_round_trip_and_ints_for_floats() -> None:
    c = SwimConfig.from_mapping({"probe_interval": 2, "gossip_nodes": 4})
    assert c.probe_interval == 2
    assert c.gossip_nodes == 4
    assert SwimConfig.from_mapping(c.as_dict()) == c


@pytest.mark.parametrize(
    ("mapping", "needle"),
    [
        ({"probe_intervall": 1.0}, "probe_intervall"),
        ({"probe_interval": "1s"}, "probe_interval"),
        ({"gossip_nodes": 2.5}, "gossip_nodes"),
        ({"indirect_checks": True}, "indirect_checks"),
        ({"probe_interval": 0}, "probe_interval"),
        ({"probe_timeout": -1.0}, "probe_timeout"),
        ({"probe_timeout": 5.0}, "probe_timeout"),
        ({"max_packet_bytes": 10}, "max_packet_bytes"),
        ({"gossip_interval": float("nan")}, "gossip_interval"),
        ({"max_members": 1}, "max_members"),
        ({"max_members": 2**70.0}, "max_members"),
        ({"new_members_per_period": 0}, "new_members_per_period"),
    ],
)
def test_from_mapping_names_the_bad_key(mapping: dict[str, object], needle: str) -> None:
    with pytest.raises(ValueError, match=needle):
        SwimConfig.from_mapping(mapping)


def test_from_mapping_rejects_non_mapping() -> None:
    with pytest.raises(ValueError, match="mapping"):
        SwimConfig.from_mapping([("a", 1)])  # type: ignore[arg-type]


def test_suspicion_timeout_formula() -> None:
    lo, hi = suspicion_bounds(4, 6, 100, 1.0)
    assert lo == pytest.approx(8.0)
    assert hi == pytest.approx(48.0)
    assert suspicion_bounds(3, 6, 5, 1.0) == (3.0, 18.0)  # log10(5) < 1: no scaling
    s = Suspicion(0, 10.0, lo, hi, k=2, accuser=1)
    assert s.deadline() == pytest.approx(58.0)
    assert not s.confirm(1)  # the accuser is no confirmation
    assert s.confirm(2)
    assert not s.confirm(2)
    expected = hi - (hi - lo) * math.log(2) / math.log(3)
    assert s.timeout() == pytest.approx(expected)
    assert s.confirm(3)
    assert s.timeout() == pytest.approx(lo)
    assert not s.confirm(4)  # capped at k
    assert Suspicion(0, 0.0, lo, hi, k=0, accuser=1).timeout() == lo


def test_awareness_is_clamped_and_scales() -> None:
    a = Awareness(8)
    a.apply(-3)
    assert a.score == 0
    assert a.scale(1.0) == 1.0
    a.apply(100)
    assert a.score == 7
    assert a.scale(0.5) == 4.0


def test_broadcast_queue_least_sent_first_and_budget() -> None:
    q: BroadcastQueue[bytes] = BroadcastQueue()
    q.push(1, b"a" * 10, 10)
    q.push(2, b"b" * 10, 10)
    assert retransmit_limit(2, 5) == 2
    assert retransmit_limit(4, 1000) == 16
    first = q.take(budget=16, limit=3)  # room for one: the newest
    assert first == [(b"b" * 10, 10)]
    second = q.take(budget=100, limit=3)
    assert second[0] == (b"a" * 10, 10)  # least sent first
    q.push(1, b"c" * 10, 10)  # replaces the older update about member 1
    assert q.pending(1) == b"c" * 10
    assert len(q) == 2
    for _ in range(3):
        q.take(budget=100, limit=3)
    assert len(q) == 0


def test_queue_skip_leaves_parts_alone() -> None:
    q: BroadcastQueue[bytes] = BroadcastQueue()
    q.push(1, b"x", 1)
    assert q.take(100, 5, skip=frozenset({b"x"})) == []
    assert q.take(100, 5) == [(b"x", 1)]


def test_table_probe_order_visits_everyone_each_pass() -> None:
    from swim import SimNetwork

    net = SimNetwork(7, seed=3)
    table = net.machine(0).table
    seen = [table.next_probe_target() for _ in range(12)]
    ids = [e.node_id for e in seen if e is not None]
    assert sorted(ids[:6]) == [1, 2, 3, 4, 5, 6]
    assert sorted(ids[6:12]) == [1, 2, 3, 4, 5, 6]
    picks = table.random_up(3, exclude={1})
    assert len({e.node_id for e in picks}) == 3
    assert all(e.node_id not in (0, 1) for e in picks)
    assert random.Random(1).random() == random.Random(1).random()
