"""Target ``machine``: UDP packets through our own format's door (``swim.rtsimdoor.RtsimDoor``) into
the machine, the node's whole receive path (intake, keyring, decoder, membership), with its
timers run between packets.

Input: one flags byte (bit 0: the member has a keyring and the target seals each packet with it;
bit 1: with a keyring, send the bytes unsealed instead, as a stranger without the key would),
then parts (``fuzz.targets.chunks``), each ``source:u8  wait:u8  packet``: the source picks one
of three known members or a stranger, ``wait`` (tenths of a second) advances the clock, and the
timers run before the packet arrives.

Promises checked: ``receive`` and ``tick`` raise nothing (a refused packet is counted), and no
datagram the machine asks to send, as the door encodes it, is larger than ``max_packet_bytes``
(``SwimConfig``).
"""

from __future__ import annotations

import random

from swim import MemberState, Output, SwimConfig, SwimMachine
from swim.keyring import UDP, Keyring
from swim.outputs import MALFORMED_REASONS
from swim.rtsimdoor import RtsimDoor
from swim.wire import StateEntry

from ..mutators import Layout, msgpack_mutator
from . import chunks, join_chunks

# The flags byte, then parts ``source wait version type`` + a msgpack body each.
custom_mutator = msgpack_mutator(
    "wire",
    Layout(
        lambda d: [(d[:1], b"")] + [(p[:4], p[4:]) for p in chunks(d[1:])],
        lambda p: p[0][0] + join_chunks([h + b for h, b in p[1:]]),
    ),
)

HOST = "127.0.0.1"
MEMBERS = (
    StateEntry(1, HOST, 7001, 0, MemberState.ALIVE, 11),
    StateEntry(2, HOST, 7002, 3, MemberState.SUSPECTED, 12),
    StateEntry(3, HOST, 7003, 1, MemberState.DEAD, 13),
)
REFUSED = MALFORMED_REASONS | {"auth"}
KEYRING = Keyring([bytes(range(32))])
PLAIN = SwimConfig(max_members=8, new_members_per_period=4)
SEALED = SwimConfig(max_members=8, new_members_per_period=4)
object.__setattr__(SEALED, "keyring", KEYRING)  # a keyring without a keyring file


def _source(byte: int) -> tuple[str, int]:
    """Members 1..3 for 0..2 (mod 4); a stranger's address otherwise."""
    if byte % 4 < 3:
        return HOST, MEMBERS[byte % 4].port
    return "10.0.0.9", 9000 + byte


def _check(door: RtsimDoor, out: Output, config: SwimConfig) -> None:
    for dg in out.datagrams:
        data = door.send(dg)
        assert len(data) <= config.max_packet_bytes, (dg.kind, len(data))


def test_one_input(data: bytes) -> bool:
    """True when every packet was decoded (none dropped as malformed or unauthenticated)."""
    if not data:
        return False
    flags, keyed = data[0], bool(data[0] & 1)
    config = SEALED if keyed else PLAIN
    now = 100.0
    m = SwimMachine(config, 0, HOST, 7000, rng=random.Random(7), now=now, boot=10)
    m.preload(MEMBERS)
    door = RtsimDoor(m)
    for part in chunks(data[1:]):
        if len(part) < 2:
            break
        now += part[1] / 10
        _check(door, m.tick(now), config)
        packet = part[2:]
        if keyed and not flags & 2:
            packet = KEYRING.seal(packet, UDP)
        _check(door, door.receive(packet, _source(part[0]), now), config)
    m.members()
    m.leader_id()
    m.next_deadline()
    return not set(m.counters.dropped) & REFUSED
