"""No single message can make a live member unrefutable (membership rules 4-6, issue 12).

All on the simulated network, in virtual time: deterministic, no sockets.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from swim import SimNetwork, SwimConfig
from swim.members import MemberState
from swim.membership import MAX_INCARNATION, MAX_JUMP
from swim.rtsimdoor import RtsimDoor
from swim.wire import (
    Ack,
    Alive,
    Dead,
    Message,
    Nack,
    Ping,
    PingReq,
    StateEntry,
    Suspect,
    encode,
)

STRANGER = ("10.66.6.6", 4444)  # an address that is nobody's: a spoofer
T = SwimConfig().probe_interval
# Rule-6 nudges heal within a few periods, push/pull (15 s) within a few more; the longest
# suspicion lasts 18 s. 60 periods bound every recovery below with room to spare.
RECOVERY = 60 * T


def everyone_sees_everyone_alive(net: SimNetwork) -> bool:
    live = net.live_ids()
    return all(net.state(i, j) == "alive" for i in live for j in live if i != j)


def down_events(net: SimNetwork) -> list[dict[str, object]]:
    return [e for e in net.events if e["new"] in ("dead", "left")]


def settled(seed: int = 1, n: int = 3, config: SwimConfig | None = None) -> SimNetwork:
    net = SimNetwork(n, config, seed=seed)
    net.run_for(3.0)
    assert everyone_sees_everyone_alive(net)
    return net


def set_incarnation(net: SimNetwork, subject: int, inc: int) -> None:
    """As if ``subject`` had refuted its way up to ``inc`` and everyone had heard."""
    for i in net.ids():
        e = net.machine(i).table.get(subject)
        assert e is not None
        e.incarnation = inc


def test_one_spoofed_dead_at_the_top_incarnation_is_refused_and_counted() -> None:
    net = settled()
    packet = encode(Dead(MAX_INCARNATION, 2, 1))
    assert len(packet) <= 14  # the tiny packet
    net.inject(0, packet, STRANGER)
    net.run_for(0.0)
    assert net.state(0, 2) == "alive"
    assert net.machine(0).counters.summary()["refused_incarnation"] == 1
    net.run_for(RECOVERY)
    assert everyone_sees_everyone_alive(net)
    assert not down_events(net)


def test_a_spoofed_dead_from_a_members_address_is_refused_too() -> None:
    net = settled()
    net.inject(0, encode(Dead(MAX_JUMP + 1, 2, 1)), net.address(1))
    net.run_for(RECOVERY)
    assert everyone_sees_everyone_alive(net)
    assert not down_events(net)


def test_jumps_up_to_the_bound_are_accepted_and_refuted() -> None:
    net = settled()
    net.inject(0, encode(Dead(MAX_JUMP, 2, 1)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 2) == "dead"  # within the bound: believed...
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY)
    assert net.machine(2).me.incarnation == MAX_JUMP + 1  # ...and refuted by outbidding


def test_every_kind_of_update_beyond_the_bound_is_refused() -> None:
    net = settled()
    m0 = net.machine(0)
    boot = m0.table.get(2).boot  # type: ignore[union-attr]
    for msg in (
        Alive(MAX_JUMP + 1, 2, *net.address(2), boot),
        Suspect(MAX_JUMP + 1, 2, 1),
        Dead(MAX_JUMP + 1, 2, 1),
        Dead(MAX_INCARNATION, 2, 2),
    ):
        net.inject(0, encode(msg), net.address(1))
    net.run_for(0.0)
    assert m0.counters.summary()["refused_incarnation"] == 4
    assert m0.table.get(2).incarnation == 0  # type: ignore[union-attr]
    assert net.state(0, 2) == "alive"


def test_a_member_accused_at_the_top_refutes_by_a_new_boot_epoch() -> None:
    net = settled()
    set_incarnation(net, 2, MAX_INCARNATION - 1)
    boot = net.machine(2).boot
    net.inject(0, encode(Suspect(MAX_INCARNATION, 2, 1)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 2) == "suspected"
    # Outbidding would need 2^63, which no codec accepts: member 2 takes a new boot instead,
    # which member 0 takes as a restart of the member it suspects.
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY)
    m2 = net.machine(2)
    assert m2.boot != boot
    assert m2.counters.epochs == 1
    assert not down_events(net)
    net.run_for(RECOVERY)
    assert everyone_sees_everyone_alive(net)


def test_a_member_at_the_top_starts_over_at_zero() -> None:
    net = settled()
    set_incarnation(net, 2, MAX_INCARNATION)
    net.inject(1, encode(Dead(MAX_INCARNATION, 2, 0)), STRANGER)
    net.run_for(0.0)
    assert net.state(1, 2) == "dead"
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY)
    assert net.machine(2).me.incarnation == 0
    assert net.machine(1).table.get(2).incarnation == 0  # type: ignore[union-attr]


def test_an_accuser_out_of_reach_below_gets_a_new_boot() -> None:
    """An accuser that lags more than the bound could not take our alive: we change boot."""
    net = settled()
    m2 = net.machine(2)
    m2.me.incarnation = 3 * MAX_JUMP  # member 2 is far ahead of what 0 and 1 hold (0)
    boot = m2.boot
    net.inject(2, encode(Suspect(0, 2, 0)), net.address(0))
    net.run_for(0.0)
    assert m2.boot != boot
    assert m2.me.incarnation == 3 * MAX_JUMP + 1
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY)


def test_a_suspected_member_that_restarted_comes_back_at_any_incarnation() -> None:
    net = settled()
    m0 = net.machine(0)
    net.inject(0, encode(Suspect(5, 2, 1)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 2) == "suspected"
    net.block(2, [0, 1])  # member 2 cannot refute: only the restart can clear it
    later = m0.table.get(2).boot + 1  # type: ignore[union-attr]
    RtsimDoor(m0).receive(encode(Alive(0, 2, *net.address(2), later)), net.address(2), net.now)
    assert net.state(0, 2) == "alive"
    assert m0.table.get(2).boot == later  # type: ignore[union-attr]


def test_the_ghost_of_an_earlier_boot_does_not_undo_a_restart() -> None:
    """Rule 4, found by ``rt_cluster explore`` (tests/scenarios/found/failure-1615.yaml): a
    member paused through a restart of member 2 wakes up gossiping 2's old boot. A member
    that holds the new boot suspected took that ghost for yet another restart and went back
    to the old boot, at a lower incarnation."""
    net = settled()
    m0 = net.machine(0)
    old = net.machine(2).boot
    net.restart(2)
    new = net.machine(2).boot
    assert net.until(lambda: m0.table.get(2).boot == new, timeout=RECOVERY)  # type: ignore[union-attr]
    inc = m0.table.get(2).incarnation  # type: ignore[union-attr]
    net.block(2, [0, 1])  # member 2 cannot refute what follows
    net.inject(0, encode(Suspect(inc, 2, 1)), STRANGER)
    net.run_for(0.0)
    assert net.state(0, 2) == "suspected"
    RtsimDoor(m0).receive(encode(Alive(0, 2, *net.address(2), old)), net.address(1), net.now)
    assert m0.table.get(2).boot == new  # type: ignore[union-attr]
    assert net.state(0, 2) == "suspected"
    # A later boot is still a restart.
    RtsimDoor(m0).receive(encode(Alive(0, 2, *net.address(2), new + 1)), net.address(2), net.now)
    assert net.state(0, 2) == "alive"


def test_the_ghost_of_an_earlier_boot_fools_no_observer_that_never_held_it() -> None:
    """Rule 4, found by ``rt_cluster explore`` (tests/scenarios/found/failure-15062.yaml):
    member 1 restarted and learned member 2's new boot only; a member that slept through
    2's restart gossiped its old boot, which 1 had never held, so it passed for a restart.
    Boots are ordered now: an earlier one never does."""
    net = settled()
    old = net.machine(2).boot
    net.run_for(5.0)
    net.restart(2)
    new = net.machine(2).boot
    assert new > old
    net.restart(1)  # knows only the new boot
    m1 = net.machine(1)
    assert net.until(lambda: m1.table.get(2) is not None, timeout=RECOVERY)
    assert net.until(lambda: m1.table.get(2).boot == new, timeout=RECOVERY)  # type: ignore[union-attr]
    inc = m1.table.get(2).incarnation  # type: ignore[union-attr]
    net.block(2, [0, 1])
    net.inject(1, encode(Suspect(inc, 2, 0)), STRANGER)
    net.run_for(0.0)
    assert net.state(1, 2) == "suspected"
    RtsimDoor(m1).receive(encode(Alive(0, 2, *net.address(2), old)), net.address(0), net.now)
    assert m1.table.get(2).boot == new  # type: ignore[union-attr]
    assert net.state(1, 2) == "suspected"


def test_a_boot_from_the_far_future_is_refused_and_counted() -> None:
    net = settled()
    m0 = net.machine(0)
    net.inject(0, encode(Suspect(0, 2, 1)), STRANGER)
    net.run_for(0.0)
    net.block(2, [0, 1])
    before = m0.counters.dropped["refused_incarnation"]
    RtsimDoor(m0).receive(encode(Alive(0, 2, *net.address(2), 2**62)), net.address(2), net.now)
    assert net.state(0, 2) == "suspected"
    assert m0.counters.dropped["refused_incarnation"] == before + 1


def test_a_spoofed_leave_is_refuted_without_push_pull() -> None:
    """Rule 6: the ack member 0 sends to member 2 carries the verdict; 2 hears and refutes."""
    net = settled(config=SwimConfig(pushpull_interval=0))
    net.inject(0, encode(Dead(0, 2, 2)), STRANGER)  # "2 left", from 2 itself
    net.run_for(0.0)
    assert net.state(0, 2) == "left"
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=10 * T)


# ---- the property: any single hostile message -----------------------------------------------

_INCS = st.one_of(
    st.sampled_from([0, 1, 2, MAX_JUMP - 1, MAX_JUMP, MAX_JUMP + 1, MAX_JUMP + 2]),
    st.sampled_from([MAX_INCARNATION - MAX_JUMP, MAX_INCARNATION - 1, MAX_INCARNATION]),
    st.integers(0, MAX_INCARNATION),
)
_IDS = st.one_of(st.integers(0, 4), st.integers(0, 2**32 - 1))
_PORTS = st.integers(0, 65535)


def _hostile(data: st.DataObject, net: SimNetwork) -> Message:
    kind = data.draw(st.sampled_from(["alive", "suspect", "dead", "ping", "ping_req", "ack"]))
    subject = data.draw(_IDS, label="subject")
    inc = data.draw(_INCS, label="incarnation")
    src = data.draw(_IDS, label="src")
    known = net.machine(subject).boot if subject in net.ids() else 1
    if kind == "alive":
        host, port = data.draw(
            st.one_of(st.sampled_from([net.address(i) for i in net.ids()]), st.just(STRANGER))
        )
        boot = data.draw(st.one_of(st.just(known), st.integers(0, 2**63 - 1)), label="boot")
        return Alive(inc, subject, host, port, boot)
    if kind == "suspect":
        return Suspect(inc, subject, src)
    if kind == "dead":
        return Dead(inc, subject, data.draw(st.sampled_from([src, subject])))
    host, port = net.address(data.draw(st.integers(0, 2)))
    seq = data.draw(st.integers(0, 2**32 - 1))
    if kind == "ping":
        return Ping(seq, subject, src, host, port)
    if kind == "ping_req":
        return PingReq(seq, subject, host, port, data.draw(st.booleans()), src, *STRANGER)
    return data.draw(st.sampled_from([Ack(seq, src), Nack(seq, src)]))


@settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_no_single_message_keeps_a_live_member_from_being_seen_alive(data: st.DataObject) -> None:
    """``membership`` rules 4-6: one spoofed message could keep a live member dead (issue 12)."""
    net = settled(seed=data.draw(st.integers(0, 3), label="seed"))
    msg = _hostile(data, net)
    to = data.draw(st.integers(0, 2), label="to")
    via = data.draw(st.sampled_from([STRANGER, *[net.address(i) for i in net.ids()]]))
    net.inject(to, encode(msg), via)
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY), (
        [[net.state(i, j) for j in net.ids()] for i in net.ids()],
        [m.counters.summary() for m in map(net.machine, net.ids())],
    )
    # ...and it lasts: nothing is left over to fire later (the longest suspicion is 18 s).
    net.run_for(20 * T)
    assert everyone_sees_everyone_alive(net)


@settings(
    max_examples=200,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(st.data())
def test_no_single_push_pull_state_keeps_a_live_member_from_being_seen_alive(
    data: st.DataObject,
) -> None:
    """``membership`` rules 4-6, for a push/pull state instead of a packet (issue 12)."""
    net = settled(seed=data.draw(st.integers(0, 3), label="seed"))
    rows = []
    for _ in range(data.draw(st.integers(1, 4), label="rows")):
        subject = data.draw(_IDS, label="subject")
        known = net.machine(subject).boot if subject in net.ids() else 1
        host, port = data.draw(st.sampled_from([*map(net.address, net.ids()), STRANGER]))
        state = data.draw(st.sampled_from([s for s in MemberState if s.wire is s]))
        boot = data.draw(st.one_of(st.just(known), st.integers(0, 2**63 - 1)), label="boot")
        rows.append(StateEntry(subject, host, port, data.draw(_INCS), state, boot))
    net.inject_state(data.draw(st.integers(0, 2), label="to"), rows, data.draw(st.none() | _IDS))
    assert net.until(lambda: everyone_sees_everyone_alive(net), timeout=RECOVERY)
    net.run_for(20 * T)
    assert everyone_sees_everyone_alive(net)
