"""One-way cuts and node clocks (issue 46): ``swim.Faults`` and the simulated network."""

from __future__ import annotations

import math
import random

import pytest

from swim import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE, Faults, SimNetwork
from swim.simclock import NodeClock
from swim.simlink import Links

DAY = 86_400.0


def test_a_cut_drops_what_the_member_sends_and_nothing_it_receives() -> None:
    f = Faults()
    f.cut_to([3, 4])
    rng = random.Random(0)
    assert f.is_cut(3)
    assert f.is_cut(4)
    assert not f.is_cut(2)
    assert not f.is_cut(None)
    assert f.outbound(3, rng) == "cut"
    assert f.outbound(2, rng) is None
    assert f.verdict(3, rng) is None  # what 3 sends to us still arrives
    assert f.active
    assert f.as_dict()["cut"] == [3, 4]
    f.heal()
    assert not f.cut
    assert not f.active


def test_outbound_draws_what_verdict_draws() -> None:
    f = Faults(loss_pct=50.0)
    a, b = random.Random(7), random.Random(7)
    assert [f.outbound(1, a) for _ in range(50)] == [f.verdict(1, b) for _ in range(50)]


def test_the_clock_setting_is_checked_and_healed() -> None:
    f = Faults()
    f.set_clock(-3600, 1.5)
    assert (f.clock_offset, f.clock_rate) == (-3600.0, 1.5)
    assert f.active
    assert f.as_dict()["clock"] == {"offset": -3600.0, "rate": 1.5}
    f.set_clock(MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE)
    f.set_clock(-MAX_CLOCK_OFFSET_S, MIN_CLOCK_RATE)
    bad = [
        (MAX_CLOCK_OFFSET_S + 1, 1.0),
        (math.nan, 1.0),
        (math.inf, 1.0),
        (0.0, 0.49),
        (0.0, 2.01),
        (0.0, math.nan),
        (0.0, -1.0),
    ]
    for offset, rate in bad:
        with pytest.raises(ValueError, match="clock"):
            f.set_clock(offset, rate)
    assert (f.clock_offset, f.clock_rate) == (-MAX_CLOCK_OFFSET_S, MIN_CLOCK_RATE)
    f.heal()
    assert (f.clock_offset, f.clock_rate) == (0.0, 1.0)
    assert not f.active


def test_links_drop_a_cut_one_way_and_a_push_pull_either_way() -> None:
    links = Links(random.Random(0), 0.0, 0.0, (0.001, 0.001))
    a, b = Faults(), Faults()
    a.cut_to([1])  # node 0 (faults a) cuts what it sends to node 1 (faults b)
    assert links.cut(0, a, 1, b)  # UDP 0 -> 1
    assert not links.cut(1, b, 0, a)  # UDP 1 -> 0 flows
    assert links.cut(0, a, 1, b, tcp=True)
    assert links.cut(1, b, 0, a, tcp=True)  # a TCP connection needs both directions


def test_a_node_clock_is_continuous_and_never_goes_back() -> None:
    c = NodeClock(10.0)
    c.set(10.0, -DAY, 2.0)
    assert c.local(11.0) == 12.0
    assert c.wall(c.local(11.0)) == pytest.approx(11.0 - DAY + 1.0)
    c.set(11.0, 0.0, 0.5)  # re-anchored: local time continues from 12
    assert c.local(11.0) == 12.0
    assert c.wall(12.0) == pytest.approx(11.0)  # true + 0 at the change
    assert c.local(13.0) == 13.0
    assert c.wall(13.0) == pytest.approx(12.0)  # then at half speed
    assert c.local(12.0) == 13.0  # an earlier true time never takes local time back
    for deadline in (13.1, 14.7, 100.3):
        assert c.local(c.true(deadline)) >= deadline  # a scheduled tick finds it due


def _recv(net: SimNetwork, i: int) -> int:
    return sum(net.machine(i).counters.recv_packets.values())


def test_a_one_way_cut_lets_packets_flow_one_way_only() -> None:
    net = SimNetwork(2, seed=1)
    net.run_for(3.0)
    net.cut(0, [1])
    net.run_for(0.1)  # packets already on the way land
    r0, r1 = _recv(net, 0), _recv(net, 1)
    net.run_for(20.0)
    assert _recv(net, 1) == r1  # nothing from 0 reaches 1
    assert _recv(net, 0) > r0 + 10  # 1's pings still reach 0


def test_a_cut_to_itself_is_refused() -> None:
    net = SimNetwork(3)
    with pytest.raises(ValueError, match="itself"):
        net.cut(1, [0, 1])


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_indirect_probes_route_around_a_one_way_cut(seed: int) -> None:
    """0 cannot reach 3, 3 reaches 0: each one's direct probes of the other fail, but
    indirect probes through the other three get through, so no member suspects or declares
    either dead; each of the two sees the other's probe fail (the cut is seen)."""
    net = SimNetwork(5, seed=seed)
    net.run_for(5.0)
    start = len(net.events)
    net.cut(0, [3])
    net.run_for(120.0)
    changes = [(e["observer"], e["subject"], e["new"]) for e in net.events[start:]]
    assert not [c for c in changes if c[2] in ("suspected", "dead")]
    assert (0, 3, "probe_failed") in changes
    assert (3, 0, "probe_failed") in changes
    assert all(net.state(i, j) == "alive" for i in range(5) for j in range(5))


def test_a_clock_at_twice_the_speed_probes_twice_as_often_and_keeps_it_on_restart() -> None:
    net = SimNetwork(5, seed=2)
    net.set_clock(2, 0.0, 2.0)
    net.run_for(100.0)
    probes = [net.machine(i).counters.probes for i in range(5)]
    others = [p for i, p in enumerate(probes) if i != 2]
    assert all(1.8 * p <= probes[2] <= 2.2 * p for p in others), probes
    net.restart(2)  # the restarted node keeps its clock
    net.run_for(50.0)
    assert 90 <= net.machine(2).counters.probes <= 110
    net.heal()
    before = net.machine(2).counters.probes
    net.run_for(50.0)
    assert 45 <= net.machine(2).counters.probes - before <= 55


def test_events_keep_true_mono_and_carry_the_node_wall_clock() -> None:
    net = SimNetwork(3, seed=5)
    net.run_for(2.0)
    net.set_clock(1, -DAY, 1.0)
    net.kill(0)
    net.run_for(30.0)
    seen = [e for e in net.events if e["observer"] == 1 and e["subject"] == 0]
    assert seen
    for e in seen:
        assert 2.0 < e["mono"] <= net.now  # on the network's true time
        assert e["wall"] == pytest.approx(e["mono"] - DAY)


def _boot_held(net: SimNetwork, i: int, j: int) -> int | None:
    e = net.machine(i).table.get(j)
    return None if e is None else e.boot


def test_a_clock_jumped_back_a_day_restarts_with_an_earlier_boot_and_is_taken_back() -> None:
    """Every clock reads ten days on; node 2's jumps back a day, then it restarts: its boot
    (drawn from its wall clock) is earlier than its last, and every member holds the new
    instance alive at its new boot within a few probe periods."""
    net = SimNetwork(5, seed=3)
    for i in range(5):
        net.set_clock(i, 10 * DAY, 1.0)
    net.restart(2)  # a boot drawn ten days on
    net.run_for(10.0)
    net.set_clock(2, 9 * DAY, 1.0)
    last = net.machine(2).boot
    net.restart(2)
    assert net.boots[2][-1] < last
    assert net.until(
        lambda: all(
            net.state(i, 2) == "alive" and _boot_held(net, i, 2) == net.machine(2).boot
            for i in net.live_ids()
        ),
        timeout=10.0,
    )
    net.run_for(30.0)
    assert all(net.state(i, 2) == "alive" for i in net.live_ids())


def test_a_clock_jumped_back_then_restarted_after_being_declared_dead_comes_back() -> None:
    net = SimNetwork(5, seed=4)
    for i in range(5):
        net.set_clock(i, 10 * DAY, 1.0)
    net.restart(2)
    net.run_for(5.0)
    net.set_clock(2, 9 * DAY, 1.0)
    last = net.machine(2).boot
    net.kill(2)
    assert net.until(lambda: all(net.state(i, 2) == "dead" for i in net.live_ids()), 60.0)
    net.restart(2)
    assert net.boots[2][-1] < last
    assert net.until(lambda: all(net.state(i, 2) == "alive" for i in net.live_ids()), 10.0)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_node_restarted_a_day_ahead_is_taken_back_once_its_clock_is_corrected(
    seed: int,
) -> None:
    """Node 2 dies, is held dead, and restarts with its clock two days ahead: its boot, drawn
    from that clock, is refused by every member (``membership`` rule 4), so it stays dead in
    their views. Once its clock is corrected, the first ack it gets carries the death (rule 6)
    and it starts a new epoch with a boot from its corrected clock (rule 5), which every member
    takes as a restart: each is probed within two rounds of the probe order (2 * (n - 1)
    periods) and answered at once; on main it stays shut out for days."""
    n = 4
    net = SimNetwork(n, seed=seed)
    net.run_for(5.0)
    net.set_clock(2, 2 * DAY, 1.0)
    net.kill(2)
    assert net.until(lambda: all(net.state(i, 2) == "dead" for i in net.live_ids()), 60.0)
    net.restart(2)
    far = net.machine(2).boot
    net.run_for(60.0)
    others = [i for i in net.live_ids() if i != 2]
    assert all(net.state(i, 2) == "dead" for i in others)  # refused while its clock is wrong
    assert all(_boot_held(net, i, 2) != far for i in others)
    net.heal()
    bound = 2 * (n - 1) * net.config.probe_interval + 1.0
    assert net.until(lambda: all(net.state(i, 2) == "alive" for i in others), bound)
    boot = net.machine(2).boot
    assert boot < far  # taken from the corrected clock, not floored at the far boot
    assert all(_boot_held(net, i, 2) == boot for i in others)
    assert net.machine(2).counters.epochs == 1
    net.run_for(60.0)
    assert all(net.state(i, j) == "alive" for i in net.live_ids() for j in net.live_ids())
    assert net.machine(2).boot == boot


def test_a_node_whose_clock_falls_days_behind_its_boot_is_still_taken_back() -> None:
    """The other side of the rule: node 2's clock falls three days behind the boot it took,
    so its boot reads as far ahead of its own clock; held dead across a partition, it comes
    back by one new epoch whose earlier boot every member takes at ``i + 1`` by plain
    precedence (``membership`` rules 4 and 5), and stays."""
    net = SimNetwork(4, seed=1)
    for i in range(4):
        net.set_clock(i, 10 * DAY, 1.0)
        net.restart(i)
    net.run_for(10.0)
    net.set_clock(2, 7 * DAY, 1.0)
    last = net.machine(2).boot
    net.partition([[0, 1, 3], [2]])
    assert net.until(lambda: all(net.state(i, 2) == "dead" for i in (0, 1, 3)), 60.0)
    net.partition([[0, 1, 2, 3]])
    assert net.until(lambda: all(net.state(i, 2) == "alive" for i in (0, 1, 3)), 10.0)
    net.run_for(60.0)
    assert all(net.state(i, j) == "alive" for i in range(4) for j in range(4))
    assert net.machine(2).boot < last
    assert all(_boot_held(net, i, 2) == net.machine(2).boot for i in (0, 1, 3))
    assert net.machine(2).counters.epochs == 1
