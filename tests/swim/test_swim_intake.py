"""Floods are shed before decoding and counted; members' traffic comes first (swim.intake).

The simulated network's cpu model charges each handled packet virtual time, so a flood
starves a member exactly as it does a real process: its acks wait behind the flood.
"""

from __future__ import annotations

import base64
from pathlib import Path

from swim import SimNetwork, SwimConfig
from swim.intake import STRANGER_PER_PERIOD, STRANGERS_PER_PERIOD
from swim.relays import MAX_RELAYS
from swim.rtsimdoor import RtsimDoor
from swim.wire import Ping, PingReq, encode

STRANGER = ("10.66.6.6", 4444)
# Seconds per packet: decoded and answered, or shed before decoding. Measured in-process the
# machine alone takes about 22 us and 0.7 us; a real driver adds socket and scheduling work.
CPU = (150e-6, 15e-6)


def suspicions_and_deaths(net: SimNetwork) -> list[dict[str, object]]:
    return [e for e in net.events if e["new"] in ("suspected", "dead", "left")]


def flood(net: SimNetwork, to: int, n: int, seconds: float, src: tuple[str, int]) -> None:
    """``n`` pings and ping-reqs spread over ``seconds``, to member ``to`` from ``src``.

    The pings' acks would go to member 1; the ping-reqs ask ``to`` to probe members 1 and 2.
    """
    a1, a2 = net.address(1), net.address(2)
    packets = [
        encode(Ping(1, to, 1, *a1)),
        encode(PingReq(2, 1, *a1, True, 9, *a2)),
        encode(PingReq(3, 2, *a2, True, 9, *a1)),
    ]
    for k in range(n):
        net.inject(to, packets[k % 3], src, delay=k * seconds / n)


def test_a_flood_from_a_spoofed_address_is_shed_without_a_false_suspicion() -> None:
    net = SimNetwork(3, seed=5, cpu=CPU)
    net.run_for(5.0)
    flood(net, 0, 50_000, 5.0, STRANGER)
    net.run_for(5.0 + 30.0)  # the flood, then more than the longest suspicion timeout
    assert not suspicions_and_deaths(net)
    s = net.machine(0).counters.summary()
    assert s["received"] >= 50_000
    assert 50_000 - 6 * STRANGER_PER_PERIOD <= s["dropped_rate"] <= 50_000
    assert s["dropped_malformed"] == s["dropped_auth"] == 0
    assert not net.overflow  # nothing waited long enough to fill a socket buffer
    for i in (1, 2):
        assert net.machine(i).counters.summary()["dropped_rate"] == 0


def test_a_flood_from_ever_new_addresses_meets_the_strangers_budget() -> None:
    net = SimNetwork(3, seed=6, cpu=CPU)
    net.run_for(5.0)
    for k in range(20_000):
        src = (f"10.77.{k >> 8 & 255}.{k & 255}", 1000 + k % 7)
        net.inject(0, encode(Ping(k, 0, 1, *net.address(1))), src, delay=k * 2e-4)
    net.run_for(4.0 + 30.0)
    assert not suspicions_and_deaths(net)
    m0 = net.machine(0)
    assert m0.counters.dropped["rate_strangers"] >= 20_000 - 6 * STRANGERS_PER_PERIOD


def test_members_do_not_draw_on_the_strangers_budget() -> None:
    net = SimNetwork(3, seed=7)
    net.run_for(3.0)
    m0 = net.machine(0)
    now = net.now
    for k in range(2 * STRANGERS_PER_PERIOD):
        RtsimDoor(m0).receive(encode(Ping(k, 0, 1, *STRANGER)), (f"10.9.0.{k % 250}", 1 + k), now)
    assert m0.counters.dropped["rate_strangers"] > 0
    before = m0.counters.sent_packets["ack"]
    door = RtsimDoor(m0)
    out = door.receive(encode(Ping(77, 0, 1, *net.address(1))), net.address(1), now)
    assert [d.kind for d in out.datagrams] == ["ack"]
    door.send(out.datagrams[0])  # the door counts what it sends
    assert m0.counters.sent_packets["ack"] == before + 1


def test_a_members_bucket_refills() -> None:
    net = SimNetwork(3, seed=8)
    net.run_for(3.0)
    m0 = net.machine(0)
    now = net.now
    ping = encode(Ping(1, 0, 1, *net.address(1)))
    for _ in range(5000):  # far more than any member sends in an instant
        RtsimDoor(m0).receive(ping, net.address(1), now)
    shed = m0.counters.dropped["rate_member"]
    assert shed > 4000
    RtsimDoor(m0).receive(ping, net.address(1), now)
    assert m0.counters.dropped["rate_member"] == shed + 1  # still empty at the same instant
    assert (
        RtsimDoor(m0).receive(ping, net.address(1), now + 1.0).datagrams
    )  # a second later: room again


def test_ping_req_fan_out_is_bounded() -> None:
    net = SimNetwork(3, seed=9)
    net.run_for(3.0)
    m0 = net.machine(0)
    a2 = net.address(2)
    relayed = 0
    for k in range(3 * MAX_RELAYS):
        out = RtsimDoor(m0).receive(
            encode(PingReq(k, 2, *a2, True, 1, *net.address(1))), net.address(1), net.now
        )
        relayed += sum(d.kind == "relay_ping" for d in out.datagrams)
    assert relayed == MAX_RELAYS
    assert m0.counters.dropped["relay_full"] == 2 * MAX_RELAYS


def test_forged_packets_in_a_members_name_do_not_use_up_its_share(tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(base64.b64encode(bytes(range(32))).decode() + "\n")
    net = SimNetwork(3, SwimConfig(keyring_file=str(keys)), seed=10, cpu=CPU)
    net.run_for(5.0)
    flood(net, 0, 50_000, 5.0, net.address(1))  # unsealed, "from" member 1's address
    net.run_for(5.0 + 30.0)
    assert not suspicions_and_deaths(net)
    s = net.machine(0).counters.summary()
    assert s["dropped_auth"] == 50_000
    assert s["dropped_rate"] == 0
