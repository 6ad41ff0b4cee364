"""Ghosts cannot grow the table or take a live member's address (``newcomers`` rules 1-3).

All on the simulated network, in virtual time, without a keyring: deterministic, no sockets.
"""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swim import SimNetwork, SwimConfig, SwimStatistics
from swim.exchange import MAX_NODE_ID
from swim.members import MemberState
from swim.rtsimdoor import RtsimDoor
from swim.wire import Alive, StateEntry, encode, encode_compound, encode_part

STRANGER = ("10.66.6.6", 4444)  # an address that is nobody's: a spoofer
T = SwimConfig().probe_interval
RECOVERY = 60 * T  # as in test_swim_incarnation: every recovery below is far shorter


def ghost_addr(i: int) -> tuple[str, int]:
    return (f"10.200.{i >> 8 & 255}.{i & 255}", 7000 + (i >> 16))


def ghost(i: int, inc: int = 0) -> Alive:
    return Alive(inc, 1000 + i, *ghost_addr(i), 4242)


def packets(msgs: list[Alive], cap: int = 1400) -> list[bytes]:
    """The messages packed into as few compound packets of at most ``cap`` bytes as fit."""
    out: list[bytes] = []
    parts: list[bytes] = []
    for m in msgs:
        part = encode_part(m)
        if parts and (len(encode_compound([*parts, part])) > cap or len(parts) == 255):
            out.append(encode_compound(parts))
            parts = []
        parts.append(part)
    return [*out, encode_compound(parts)] if parts else out


def settled(n: int = 5, config: SwimConfig | None = None, seed: int = 1) -> SimNetwork:
    net = SimNetwork(n, config, seed=seed)
    net.run_for(3.0)
    assert everyone_real_sees_everyone_alive(net, n)
    return net


def everyone_real_sees_everyone_alive(net: SimNetwork, n: int) -> bool:
    live = [i for i in net.live_ids() if i < n]
    return all(net.state(i, j) == "alive" for i in live for j in live if i != j)


def real_down_events(net: SimNetwork, n: int) -> list[dict[str, object]]:
    return [e for e in net.events if e["new"] in ("dead", "left") and e["subject"] < n]  # type: ignore[operator]


def summary(net: SimNetwork, i: int) -> dict[str, int]:
    return net.machine(i).counters.summary()


# ---- rule 7: bounded growth -------------------------------------------------------------------


def test_a_flood_of_spoofed_alives_about_new_ids_leaves_the_table_bounded() -> None:
    n, flood, seconds = 5, 10_000, 10.0
    net = settled(n)
    start = net.now
    sent = packets([ghost(i) for i in range(flood)])
    for k, p in enumerate(sent):  # from member 1's address, within its packet budget
        net.inject(0, p, net.address(1), delay=k * seconds / len(sent))
    budget = SwimConfig().new_members_per_period
    while net.now < start + seconds + RECOVERY:
        net.run_for(0.5)
        periods = math.ceil((net.now - start) / T) + 1
        for i in net.ids():  # never more than a budget of newcomers per period, anywhere
            assert len(net.machine(i).table) <= n + budget * periods
    assert len(net.machine(0).table) < n + budget * (seconds + RECOVERY + 2) < flood
    assert summary(net, 0)["refused_new_member"] >= flood - len(net.machine(0).table)
    assert everyone_real_sees_everyone_alive(net, n)
    assert not real_down_events(net, n)
    stats = SwimStatistics.build(net.machine(0).counters, node_id=0, up=0, total=0,
                                 incarnation=0, health=0)  # fmt: skip
    assert stats.refused_new_member == summary(net, 0)["refused_new_member"] > 0


def test_the_table_never_exceeds_max_members() -> None:
    n, cap = 4, 40
    net = settled(n, SwimConfig(max_members=cap))
    for k, p in enumerate(packets([ghost(i) for i in range(2000)])):
        net.inject(k % 2, p, net.address(2 + k % 2), delay=k * 0.2)
    end = net.now + 20.0 + RECOVERY
    while net.now < end:
        net.run_for(0.5)
        assert all(len(net.machine(i).table) <= cap for i in net.ids())
    assert net.machine(0).counters.dropped["table_full"] > 0
    assert everyone_real_sees_everyone_alive(net, n)
    assert not real_down_events(net, n)


def test_at_the_cap_only_a_member_down_for_long_makes_room() -> None:
    config = SwimConfig(max_members=10)
    net = settled(3, config)
    m0 = net.machine(0)
    dead = [StateEntry(1000 + i, *ghost_addr(i), 0, MemberState.DEAD, 1) for i in range(7)]
    net.inject_state(0, dead, 1)
    assert len(m0.table) == 10
    net.inject(0, encode(ghost(50)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 1050) is None  # the dead are recent: still shown, nobody makes room
    assert m0.counters.dropped["table_full"] == 1
    net.run_for(config.gossip_to_the_dead_time + 1.0)
    net.inject(0, encode(ghost(50)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 1050) == "alive"
    assert net.state(0, 1000) is None  # the one down the longest made room
    assert [net.state(0, 1000 + i) for i in range(1, 7)] == ["dead"] * 6
    assert (len(m0.table), m0.counters.evicted) == (10, 1)


def test_a_large_join_over_a_small_budget_still_converges() -> None:
    n = 60
    net = SimNetwork(n, SwimConfig(new_members_per_period=8), seed=0, bootstrap=False)
    assert net.until(lambda: everyone_real_sees_everyone_alive(net, n), timeout=30 * T)
    assert all(len(net.members(i)) == n for i in net.ids())
    assert sum(summary(net, i)["refused_new_member"] for i in net.ids()) > 0


def test_a_ghost_with_the_top_id_does_not_break_induction() -> None:
    net = settled(3)
    m0 = net.machine(0)
    for i, top in enumerate((MAX_NODE_ID, 2**32 - 1)):
        net.inject(0, encode(Alive(0, top, *ghost_addr(i), 1)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, MAX_NODE_ID) == "alive"
    handed = [m0.next_free_id() for _ in range(5)]
    assert all(0 <= h <= MAX_NODE_ID and h not in m0.table for h in handed)
    assert len(set(handed)) == 5


# ---- rule 8: one address, one live member -----------------------------------------------------


def test_a_ghost_at_a_live_members_address_is_refused() -> None:
    net = settled(3)
    m0 = net.machine(0)
    boot1 = net.machine(1).boot
    net.inject(0, encode(Alive(0, 99, *net.address(2), 7)), STRANGER)
    net.inject(0, encode(Alive(0, 98, *net.address(0), 7)), STRANGER)  # at our own address
    net.inject(0, encode(Alive(1, 1, *net.address(2), boot1)), STRANGER)  # 1 "moves" onto 2
    net.run_for(0.0)
    rows = [
        StateEntry(97, *net.address(1), 0, MemberState.ALIVE, 7),
        StateEntry(96, *net.address(2), 0, MemberState.DEAD, 7),
    ]
    net.inject_state(0, rows, None)
    assert [net.state(0, g) for g in (99, 98, 97, 96)] == [None] * 4
    assert [m0.table.id_at(*net.address(i)) for i in range(3)] == [0, 1, 2]
    assert m0.table.get(1).incarnation == 0  # type: ignore[union-attr]
    assert summary(net, 0)["refused_address"] == 5
    net.run_for(RECOVERY)
    assert everyone_real_sees_everyone_alive(net, 3)
    assert not real_down_events(net, 3)


def test_a_new_id_at_the_address_of_a_member_held_dead_takes_it() -> None:
    net = settled(4)
    net.kill(3)
    assert net.until(lambda: all(net.state(i, 3) == "dead" for i in range(3)), timeout=RECOVERY)
    new = net.add(at=3)
    assert net.machine(new).address == net.address(3)
    live = [0, 1, 2, new]
    assert net.until(
        lambda: all(net.state(i, j) == "alive" for i in live for j in live if i != j),
        timeout=10 * T,
    )
    assert all(net.machine(i).table.id_at(*net.address(3)) == new for i in range(3))
    assert all(net.state(i, 3) == "dead" for i in range(3))


def test_a_new_id_at_once_on_a_reused_port_is_taken_once_the_old_one_is_dead() -> None:
    net = settled(4)
    net.kill(3)
    new = net.add(at=3)  # before anyone noticed 3 is gone: its address is held up for now
    live = [0, 1, 2, new]
    assert net.until(
        lambda: all(net.state(i, j) == "alive" for i in live for j in live if i != j),
        timeout=RECOVERY,
    )
    assert all(net.state(i, 3) == "dead" for i in range(3))
    assert all(net.machine(i).table.id_at(*net.address(3)) == new for i in range(3))
    assert net.state(new, 3) is None  # it never took its predecessor for itself


# ---- the property: any stream of ghosts -------------------------------------------------------

_GHOST_IDS = st.integers(3, 2**32 - 1)


def _addr(data: st.DataObject) -> tuple[str, int]:
    real = st.sampled_from([SimNetwork.address(i) for i in range(3)])
    return data.draw(st.one_of(real, st.builds(ghost_addr, st.integers(0, 40))), label="addr")


def _invariants(net: SimNetwork, cap: int) -> None:
    for i in net.ids():
        table = net.machine(i).table
        assert len(table) <= cap
        for e in table:  # every member held up holds its own address
            assert not e.state.is_up or table.id_at(e.host, e.port) == e.node_id
        assert [table.id_at(*net.address(j)) for j in range(3)] == [0, 1, 2]


@settings(
    max_examples=100,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_no_stream_of_ghosts_breaks_the_table(data: st.DataObject) -> None:
    cap = 12
    net = settled(3, SwimConfig(max_members=cap, new_members_per_period=3))
    for _ in range(data.draw(st.integers(1, 12), label="steps")):
        to = data.draw(st.integers(0, 2), label="to")
        if data.draw(st.booleans(), label="udp"):
            msgs = [Alive(data.draw(st.integers(0, 3)), data.draw(_GHOST_IDS), *_addr(data), 9)
                    for _ in range(data.draw(st.integers(1, 8)))]  # fmt: skip
            net.inject(to, packets(msgs)[0], data.draw(st.sampled_from([STRANGER, net.address(1)])))
        else:
            state = data.draw(st.sampled_from([s for s in MemberState if s.wire is s]))
            rows = [StateEntry(data.draw(_GHOST_IDS), *_addr(data), 0, state, 9)
                    for _ in range(data.draw(st.integers(1, 8)))]  # fmt: skip
            net.inject_state(to, rows, data.draw(st.none() | st.integers(0, 2)))
        net.run_for(data.draw(st.sampled_from([0.0, 0.3, 2.0, 20.0]), label="wait"))
        _invariants(net, cap)
    net.run_for(RECOVERY)
    _invariants(net, cap)
    assert everyone_real_sees_everyone_alive(net, 3)
    assert not real_down_events(net, 3)


def test_intake_buckets_stay_bounded_while_a_member_keeps_moving() -> None:
    net = settled(3)
    m0 = net.machine(0)
    boot = m0.table.get(2).boot  # type: ignore[union-attr]
    for inc in range(1, 2001):  # "2 moved" 2,000 times, and spoke from its new address
        addr, now = ghost_addr(inc), net.now + inc * 0.05
        RtsimDoor(m0).receive(encode(Alive(inc, 2, *addr, boot)), ("10.77.0.1", inc), now)
        assert m0.table.id_at(*addr) == 2
        RtsimDoor(m0).receive(encode(Alive(inc, 2, *addr, boot)), addr, now)  # a member's: a bucket
    assert not m0.counters.dropped  # every one was taken
    assert len(m0.intake._buckets) <= 2 * len(m0.table) + 64
