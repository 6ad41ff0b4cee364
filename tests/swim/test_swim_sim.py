"""The protocol on the deterministic simulated network, in virtual time."""

from __future__ import annotations

from typing import Any

import pytest

from swim import MemberState, SimNetwork, SwimConfig
from swim.rtsimdoor import RtsimDoor


def all_see(net: SimNetwork, subject: int, state: str, observers: list[int] | None = None) -> bool:
    obs = net.live_ids() if observers is None else observers
    return all(net.state(i, subject) == state for i in obs if i != subject)


def dead_events(net: SimNetwork, subject: int) -> list[dict[str, object]]:
    return [e for e in net.events if e["subject"] == subject and e["new"] == "dead"]


@pytest.mark.parametrize("n", [3, 4, 5, 8])
def test_kill_is_detected_by_every_survivor(n: int) -> None:
    net = SimNetwork(n, seed=n)
    net.run_for(5.0)
    victim = n - 1
    net.kill(victim)
    t_kill = net.now
    assert net.until(lambda: all_see(net, victim, "dead"), timeout=120.0)
    # completeness: every survivor holds it dead, nobody else is down
    for i in net.live_ids():
        states = {m.node_id: m.state for m in net.members(i)}
        assert states[victim] is MemberState.DEAD
        assert all(s is MemberState.ALIVE for j, s in states.items() if j != victim)
    first = min(float(e["mono"]) for e in dead_events(net, victim))  # type: ignore[arg-type]
    assert first > t_kill
    assert {e["subject"] for e in net.events if e["new"] == "dead"} == {victim}


def test_detection_time_is_near_theory() -> None:
    """Mean first-suspect over many kills is about e/(e-1)*T + timeout (loose bounds)."""
    delays = []
    for seed in range(12):
        net = SimNetwork(6, seed=100 + seed)
        net.run_for(3.0)
        net.kill(5)
        t0 = net.now
        assert net.until(
            lambda net=net: any(e["subject"] == 5 and e["new"] == "suspected" for e in net.events),
            timeout=30.0,
        )
        first = min(e["mono"] for e in net.events if e["subject"] == 5)
        delays.append(first - t0)
    mean = sum(delays) / len(delays)
    assert 0.2 < mean < 4.0


def test_suspected_live_node_refutes_with_higher_incarnation() -> None:
    net = SimNetwork(5, seed=7)
    net.run_for(3.0)
    # Node 4 cannot hear anyone for a while: the others suspect it...
    net.block(4, [0, 1, 2, 3])
    assert net.until(lambda: any(net.state(i, 4) == "suspected" for i in range(4)), timeout=30)
    net.heal()
    # ...then it hears the suspicion (buddy system / gossip) and refutes with inc + 1.
    assert net.until(lambda: all_see(net, 4, "alive"), timeout=30)
    assert net.machine(4).me.incarnation >= 1
    refutes = [e for e in net.events if e["observer"] == 4 and e["cause"] == "refute"]
    assert refutes
    assert refutes[0]["incarnation"] == 1
    assert all(m.incarnation >= 1 for i in range(4) for m in net.members(i) if m.node_id == 4)
    assert not dead_events(net, 4)


def test_buddy_probe_carries_the_suspicion() -> None:
    """A suspect that gets probed hears of the suspicion in that very probe and refutes."""
    net = SimNetwork(4, seed=3)
    net.run_for(2.0)
    m0 = net.machine(0)
    from swim.wire import Suspect

    m0.membership.apply(Suspect(0, 3, 1), "gossip", net.now)
    assert net.state(0, 3) == "suspected"
    m0.outbox.queue.clear()  # only the probe itself can tell node 3 now
    m0.table._swaps, m0.table._pos, m0.table._end = {0: 3}, 0, 1  # 3 is next to probe
    m0.prober.next_probe = net.now
    out = m0.tick(net.now)
    assert out.datagrams
    assert out.datagrams[0].dest == 3
    m3 = net.machine(3)
    reply = RtsimDoor(m3).receive(RtsimDoor(m0).send(out.datagrams[0]), m0.address, net.now)
    assert m3.me.incarnation == 1
    RtsimDoor(m0).receive(RtsimDoor(m3).send(reply.datagrams[0]), m3.address, net.now + 0.001)
    assert net.state(0, 3) == "alive"
    assert m0.table.get(3) is not None
    assert m0.table.get(3).incarnation == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_no_false_dead_at_20_percent_loss_lan_profile(seed: int) -> None:
    """Serf's LAN profile (k = 3 helpers) rides out 20 % loss with no false verdict.

    ``buddies`` rule 2: when one unanswered buddy ping confirmed a suspicion, 20 % loss made
    false deaths (issue 13)."""
    net = SimNetwork(6, SwimConfig.lan(), seed=seed, loss=20.0)
    net.run_for(300.0)
    assert not [e for e in net.events if e["new"] in ("dead", "left")]
    for i in net.ids():
        assert all(m.state.is_up for m in net.members(i))


@pytest.mark.parametrize("seed", [1, 2])
def test_no_false_dead_at_10_percent_loss_local_profile(seed: int) -> None:
    """The loopback profile (k = 1 helper) is meant for low loss; 10 % it still rides out."""
    net = SimNetwork(6, seed=seed, loss=10.0)
    net.run_for(300.0)
    assert not [e for e in net.events if e["new"] in ("dead", "left")]


def test_pause_shorter_than_min_suspicion_is_not_dead() -> None:
    cfg = SwimConfig()
    net = SimNetwork(5, cfg, seed=11)
    net.run_for(3.0)
    net.pause(2, dur=cfg.suspicion_mult * cfg.probe_interval * 0.8)
    net.run_for(40.0)
    assert not dead_events(net, 2)
    assert all_see(net, 2, "alive")


def test_partition_then_heal() -> None:
    net = SimNetwork(5, seed=5)
    net.run_for(3.0)
    net.partition([[0, 1], [2, 3, 4]])
    assert net.until(
        lambda: all_see(net, 0, "dead", [2, 3, 4]) and all_see(net, 3, "dead", [0, 1]), timeout=120
    )
    net.run_for(30.0)  # past gossip_to_the_dead_time: only the periodic re-join can heal it
    net.heal()
    healed = net.until(
        lambda: all(all(m.state is MemberState.ALIVE for m in net.members(i)) for i in net.ids()),
        timeout=120,
    )
    assert healed, [net.members(i) for i in net.ids()]
    assert {net.leader(i) for i in net.ids()} == {0}


def test_graceful_leave() -> None:
    net = SimNetwork(5, seed=9)
    net.run_for(3.0)
    net.leave(4)
    assert net.until(lambda: all_see(net, 4, "left", [0, 1, 2, 3]), timeout=10)
    net.run_for(30.0)
    assert all_see(net, 4, "left", [0, 1, 2, 3])
    assert not [e for e in net.events if e["new"] == "suspected"]


def test_restart_is_recognised_as_new() -> None:
    net = SimNetwork(5, seed=13)
    net.run_for(3.0)
    old_boot = net.machine(3).boot
    net.kill(3)
    assert net.until(lambda: all_see(net, 3, "dead"), timeout=120)
    net.restart(3)
    assert net.machine(3).boot != old_boot
    assert net.until(lambda: all_see(net, 3, "alive", [0, 1, 2, 4]), timeout=60)
    assert net.machine(3).me.incarnation >= 1
    assert all(m.state is MemberState.ALIVE for m in net.members(3))
    causes = {e["cause"] for e in net.events if e["subject"] == 3 and e["old"] == "dead"}
    assert causes <= {"restart", "pushpull"}


def test_fast_restart_outbids_its_predecessor() -> None:
    net = SimNetwork(4, seed=17)
    net.run_for(3.0)
    net.kill(2)
    net.restart(2)  # before anybody noticed: same address, new boot
    net.run_for(20.0)
    assert all_see(net, 2, "alive")
    assert not dead_events(net, 2)
    boot = net.machine(2).boot
    for i in (0, 1, 3):
        e = net.machine(i).table.get(2)
        assert e is not None
        assert e.boot == boot


def test_join_through_seeds_converges_and_add() -> None:
    net = SimNetwork(5, seed=21, bootstrap=False)
    assert net.until(lambda: all(len(net.members(i)) == 5 for i in net.ids()), timeout=30)
    new = net.add()
    assert new == 5
    assert net.until(lambda: all_see(net, new, "alive") and len(net.members(new)) == 6, timeout=60)
    assert {net.leader(i) for i in net.ids()} == {0}


def test_leader_moves_when_lowest_dies() -> None:
    net = SimNetwork(3, seed=23)
    net.run_for(2.0)
    assert net.leader(1) == 0
    net.kill(0)
    assert net.until(lambda: net.leader(1) == 1 and net.leader(2) == 1, timeout=120)


def test_two_node_cluster_and_single_node() -> None:
    solo = SimNetwork(1, seed=1)
    solo.run_for(30.0)
    assert [m.state for m in solo.members(0)] == [MemberState.ALIVE]
    pair = SimNetwork(2, seed=2)
    pair.run_for(2.0)
    pair.kill(1)
    assert pair.until(lambda: pair.state(0, 1) == "dead", timeout=60)


def test_simulation_is_deterministic() -> None:
    def run() -> list[dict[str, object]]:
        net = SimNetwork(6, seed=42, loss=10.0, dup=5.0)
        net.run_for(5.0)
        net.kill(1)
        net.run_for(30.0)
        return net.events

    assert run() == run()


def test_duplication_and_delay_are_harmless() -> None:
    net = SimNetwork(5, seed=31, dup=30.0, delay=(0.001, 0.08))
    net.run_for(60.0)
    assert not [e for e in net.events if e["new"] in ("suspected", "dead")]


def test_join_retries_quickly_while_alone() -> None:
    """Members started before their seed listens keep retrying each period, not every 20 s."""
    net = SimNetwork(1, seed=41, bootstrap=False, seeds=(0,))
    net.pause(0)  # the seed is not answering yet
    ids = [net.add() for _ in range(4)]
    net.run_for(2.5)
    assert all(len(net.members(i)) == 1 for i in ids)
    net.resume(0)
    t0 = net.now
    assert net.until(lambda: all(len(net.members(i)) == 5 for i in net.ids()), timeout=30)
    assert net.now - t0 < 5.0


def test_newcomer_is_probed_within_the_pass_it_joined_in() -> None:
    net = SimNetwork(12, seed=43)
    net.run_for(3.0)
    new = net.add()
    assert net.until(lambda: all_see(net, new, "alive"), timeout=10)
    before = net.machine(new).counters.recv_packets["ping"]
    net.run_for(11.0)  # at most the rest of one pass of 12 periods
    assert net.machine(new).counters.recv_packets["ping"] - before >= 11


def test_packets_as_records_weigh_and_act_as_their_bytes() -> None:
    """Between members without a keyring a packet travels as records (``simnodes`` rule 5):
    the same history, and every member's sent and received counts to the byte, as when each
    packet is encoded and decoded (``records=False``)."""

    def run(records: bool) -> tuple[list[dict[str, Any]], list[tuple[Any, ...]]]:
        net = SimNetwork(8, seed=7, loss=5.0, dup=5.0, bootstrap=False, records=records)
        net.run_for(5.0)
        net.kill(3)
        net.pause(5, 3.0)
        net.run_for(20.0)
        counts = [
            (c.sent_packets, c.sent_bytes, c.recv_packets, c.recv_bytes, c.dropped, c.arrived)
            for c in (net.machine(i).counters for i in net.ids())
        ]
        return net.events, counts

    records = run(True)
    as_bytes = run(False)
    assert records[0]
    assert records == as_bytes


def test_a_quiet_network_skips_the_fault_checks_without_changing_history() -> None:
    """``simnet`` rule 7: with no partition and no faults set, packets skip the link model's
    fault checks; a run made to take them every time has the same events, to the draw."""

    def run(checked: bool) -> list[dict[str, object]]:
        net = SimNetwork(7, seed=11, loss=3.0, dup=3.0)
        net.run_for(3.0)
        net.partition([[0, 1, 2], [3, 4, 5, 6]])
        net.run_for(4.0)
        net.heal()
        net.run_for(4.0)
        net.kill(5)
        net._faults = checked  # the slow path, as if a fault had been set
        net.run_for(20.0)
        return net.events

    quiet = run(False)
    assert any(e["new"] == "dead" for e in quiet)
    assert quiet == run(True)
