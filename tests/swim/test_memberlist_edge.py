"""The memberlist edge (``swim.memberlist.edge``): names to the machine's ids and back, as its
rules say. An rtsim node's tag gives its id; any other name a stable id of its own; accusations
of names never seen are skipped; an ack names the member its ping was for; a ping for another
name is dropped; the number of names is bounded.
"""

from __future__ import annotations

import pytest

from swim import MemberState, wire
from swim.memberlist import codec, decode_tags, encode_tags
from swim.memberlist.edge import FOREIGN_BASE, FOREIGN_BOOT, UNKNOWN_PEER, Edge

HOST = "127.0.0.1"
ME = "rt-0"
BOOT = 77
SRC = (HOST, 40000)
U32 = 2**32 - 1


def make_edge(
    max_names: int = 100,
    at: dict[tuple[str, int], int] | None = None,
    held: set[int] | None = None,
) -> tuple[Edge, list[str]]:
    """Node 0's edge (``id_at`` answers from ``at``; the machine holds every id it names, or
    those of ``held``) and the drop reasons it counts, in order."""
    drops: list[str] = []
    edge = Edge(
        0,
        ME,
        {"role": "db"},
        boot=lambda: BOOT,
        id_at=lambda host, port: (at or {}).get((host, port)),
        max_names=max_names,
        drop=drops.append,
        holds=lambda node: held is None or node in held,
    )
    return edge, drops


def alive(name: str, meta: bytes = b"", inc: int = 1, port: int = 7946) -> codec.Alive:
    return codec.Alive(inc, name, HOST, port, meta, codec.VSN)


def id_of_alive(edge: Edge, name: str, meta: bytes = b"") -> int:
    (msg,) = edge.inbound([alive(name, meta)], SRC)
    assert isinstance(msg, wire.Alive)
    return msg.node


# ---- ids (rule 1) -------------------------------------------------------------------------------


def test_an_rtsim_tag_gives_its_id_and_the_member_is_described() -> None:
    edge, _ = make_edge()
    meta = encode_tags({"rtsim": "3", "zone": "b"})
    assert edge.inbound([alive("rt-3", meta)], SRC) == [wire.Alive(1, 3, HOST, 7946, FOREIGN_BOOT)]
    assert edge.describe(3) == {"name": "rt-3", "tags": {"rtsim": "3", "zone": "b"}, "rtsim": True}
    assert decode_tags(edge.members[0].meta) == {"role": "db", "rtsim": "0"}  # our own meta


def test_a_tag_naming_an_id_already_held_gives_a_foreign_id() -> None:
    edge, _ = make_edge()
    assert id_of_alive(edge, "rt-3", encode_tags({"rtsim": "3"})) == 3
    for name, hint in (("impostor", "3"), ("me-too", "0")):
        got = id_of_alive(edge, name, encode_tags({"rtsim": hint}))
        assert got >= FOREIGN_BASE, (name, got)


@pytest.mark.parametrize(
    "hint",
    ["²", "١٢", "-1", "3.0", " 3", "0x3", "", "9" * 11, str(UNKNOWN_PEER), str(2**40)],
)
def test_a_tag_that_is_not_an_id_gives_a_foreign_id(hint: str) -> None:
    edge, _ = make_edge()
    got = id_of_alive(edge, "odd", encode_tags({"rtsim": hint}))
    assert got >= FOREIGN_BASE, got


def test_a_foreign_name_gets_the_same_id_every_time_and_everywhere() -> None:
    (one, _), (two, _) = make_edge(), make_edge()
    first = id_of_alive(one, "serf-a", encode_tags({"role": "web"}))
    assert first >= FOREIGN_BASE
    assert id_of_alive(one, "serf-a") == first
    assert one.id_of("serf-a") == first
    assert id_of_alive(two, "serf-a") == first  # derived from the name: nodes mostly agree
    assert id_of_alive(one, "serf-b") not in (first, 0)
    assert one.describe(first) == {"name": "serf-a", "tags": {"role": "web"}, "rtsim": False}


def test_two_names_whose_ids_collide_get_two_ids() -> None:
    edge, _ = make_edge()
    a, b = id_of_alive(edge, "n158230"), id_of_alive(edge, "n2006127")  # crc32s that collide
    assert b == a + 1
    assert (edge.id_of("n158230"), edge.id_of("n2006127")) == (a, b)


def test_at_most_max_names_are_held_and_the_rest_are_counted() -> None:
    edge, drops = make_edge(max_names=3)  # ours and two more
    assert id_of_alive(edge, "serf-a") != id_of_alive(edge, "serf-b")
    assert edge.inbound([alive("serf-c")], SRC) == []
    assert edge.id_of("serf-d") is None
    assert drops == ["refused_name", "refused_name"]
    assert id_of_alive(edge, "serf-a") >= FOREIGN_BASE  # names held keep working


def test_a_full_map_lets_go_of_names_the_machine_does_not_hold() -> None:
    held: set[int] = set()
    edge, drops = make_edge(max_names=3, held=held)
    a = id_of_alive(edge, "serf-a")
    held.add(a)  # the machine took serf-a in; serf-b it refused (a newcomer over budget)
    edge.outbound([wire.Ping(9, id_of_alive(edge, "serf-b"), 0, HOST, 1)])  # a ping to serf-b
    c = id_of_alive(edge, "serf-c")  # the map is full: serf-b's name goes, serf-c comes in
    assert drops == []
    assert edge.known("serf-b") is None
    assert (edge.known("serf-a"), edge.known("serf-c")) == (a, c)
    assert edge.inbound([codec.Ack(9)], SRC) == [
        wire.Ack(9, UNKNOWN_PEER)
    ]  # its pending ack went too
    held.add(c)
    assert edge.id_of("serf-d") is None  # every name held: refused
    assert drops == ["refused_name"]


# ---- boots (rule 2) -----------------------------------------------------------------------------


def test_an_update_about_this_node_carries_its_boot_and_others_the_foreign_one() -> None:
    edge, _ = make_edge()
    ours, theirs = edge.inbound([alive(ME, inc=5), alive("serf-a")], SRC)
    assert (ours, theirs.boot) == (wire.Alive(5, 0, HOST, 7946, BOOT), FOREIGN_BOOT)
    state = codec.NodeState(ME, HOST, 7946, b"", 2, 1, codec.VSN)
    (entry,) = edge.states_in([state])
    assert (entry.node, entry.boot, entry.incarnation) == (0, BOOT, 2)


# ---- acks (rule 3) ------------------------------------------------------------------------------


def test_an_ack_is_named_after_the_member_its_ping_was_for() -> None:
    edge, _ = make_edge()
    serf = id_of_alive(edge, "serf-a")
    (sent,) = edge.outbound([wire.Ping(41, serf, 0, HOST, 7000)])  # serf-a is pinged
    (ping,) = codec.decode_packet(sent, None, 1400).messages
    assert ping == codec.Ping(41, "serf-a", HOST, 7000, ME)
    assert edge.inbound([codec.Ack(41)], SRC) == [wire.Ack(41, serf)]
    assert edge.inbound([codec.Ack(41)], SRC) == [wire.Ack(41, UNKNOWN_PEER)]  # once
    assert edge.inbound([codec.Ack(99)], SRC) == [wire.Ack(99, UNKNOWN_PEER)]  # never sent


def test_an_ack_of_an_indirect_ping_names_its_target() -> None:
    edge, _ = make_edge()
    serf = id_of_alive(edge, "serf-b")
    (sent,) = edge.outbound([wire.PingReq(7, serf, HOST, 7947, True, 0, HOST, 7000)])
    (req,) = codec.decode_packet(sent, None, 1400).messages
    assert req == codec.IndirectPing(7, HOST, 7947, "serf-b", True, HOST, 7000, ME)
    assert edge.inbound([codec.Ack(7)], SRC) == [wire.Ack(7, serf)]


# ---- inbound pings and accusations (rule 4) -----------------------------------------------------


def test_a_ping_for_another_name_is_dropped_as_misdirected() -> None:
    edge, drops = make_edge(at={SRC: 5})
    assert edge.inbound([codec.Ping(1, "rt-9", "", 0, "")], SRC) == []
    assert drops == ["misdirected"]
    assert edge.inbound([codec.Ping(2, ME, "", 0, ""), codec.Ping(3, "", HOST, 9, "")], SRC) == [
        wire.Ping(2, 0, 5, HOST, 40000),  # the sender by its address, acked to it
        wire.Ping(3, 0, 5, HOST, 9),  # acked where it asks
    ]


def test_suspicions_and_deaths_of_a_name_never_seen_are_skipped() -> None:
    edge, drops = make_edge()
    msgs = [codec.Suspect(1, "ghost", "serf-a"), codec.Dead(1, "ghost", "ghost")]
    assert edge.inbound(msgs, SRC) == []
    assert drops == ["unknown_member", "unknown_member"]
    assert "ghost" not in {m.name for m in edge.members.values()}


def test_an_accusation_names_its_accuser_and_a_departure_its_member() -> None:
    edge, _ = make_edge(at={SRC: 5})
    serf = id_of_alive(edge, "serf-a")
    got = edge.inbound(
        [codec.Suspect(2, "serf-a", ME), codec.Dead(3, "serf-a", "serf-a"), codec.Dead(4, ME, "")],
        SRC,
    )
    assert got == [wire.Suspect(2, serf, 0), wire.Dead(3, serf, serf), wire.Dead(4, 0, 5)]


# ---- outbound -----------------------------------------------------------------------------------


def test_an_incarnation_beyond_uint32_is_never_sent() -> None:
    edge, drops = make_edge()
    serf = id_of_alive(edge, "serf-a")
    said = edge.outbound([wire.Alive(U32, 0, HOST, 7000, BOOT), wire.Suspect(U32 + 1, serf, 0)])
    assert len(said) == 1
    assert drops == ["unsayable"]
    (back,) = codec.decode_packet(said[0], None, 1400).messages
    assert back == codec.Alive(U32, ME, HOST, 7000, edge.members[0].meta, codec.VSN)


def test_members_without_a_name_are_left_out_of_what_is_sent() -> None:
    edge, _ = make_edge()
    assert edge.outbound([wire.Ping(1, 12345, 0, HOST, 7000), wire.Dead(1, 12345, 0)]) == []
    entries = [wire.StateEntry(12345, HOST, 1, 1, MemberState.ALIVE, 1)]
    assert edge.states_out(entries) == []


def test_a_ping_from_a_stranger_names_no_member_and_is_answered_where_it_can_be() -> None:
    edge, _ = make_edge()
    (ping,) = edge.inbound([codec.Ping(5, ME, "10.0.0.9", 7946, "")], SRC)
    assert isinstance(ping, wire.Ping)
    assert (ping.src, ping.src_host, ping.src_port) == (UNKNOWN_PEER, "10.0.0.9", 7946)
    (ping,) = edge.inbound([codec.Ping(6, ME, "10.0.0.9", 0, "")], SRC)  # an address, no port
    assert isinstance(ping, wire.Ping)
    assert (ping.src_host, ping.src_port) == SRC  # the packet's own source, as memberlist does
