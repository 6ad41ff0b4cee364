"""Gossip sealed with shared keys (swim.keyring): files, sealing, rotation, mixed clusters."""

from __future__ import annotations

import base64
import random
from pathlib import Path

import msgpack
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st

from swim import BadMessage, SimNetwork, SwimConfig, decode_untrusted, open_swim
from swim.exchange import open_sealed, pushpull_request, seal
from swim.keyring import OVERHEAD, SEAL_VERSION, TCP_REPLY, TCP_REQUEST, UDP, Keyring, load_keyring
from swim.members import MemberState
from swim.rtsimdoor import RtsimDoor
from swim.wire import VERSION, Ping, StateEntry, encode
from tests.support import wait_for_async
from tests.swim.test_swim_driver import FAST, run_member

K1, K2, K3 = bytes(range(16)), bytes(range(100, 132)), bytes(range(50, 74))


def keyfile(tmp_path: Path, *keys: bytes, name: str = "keys") -> str:
    path = tmp_path / name
    path.write_text("".join(base64.b64encode(k).decode() + "\n" for k in keys))
    return str(path)


def keyed(tmp_path: Path, *keys: bytes, base: SwimConfig | None = None, **kw: object) -> SwimConfig:
    name = "keys-" + "-".join(k[:2].hex() for k in keys)
    d = {
        **(base or SwimConfig()).as_dict(),
        **kw,
        "keyring_file": keyfile(tmp_path, *keys, name=name),
    }
    return SwimConfig.from_mapping(d)


# ---- the file ----------------------------------------------------------------------------


def test_a_keyring_file_holds_one_base64_key_per_line(tmp_path: Path) -> None:
    path = tmp_path / "keys"
    path.write_text(
        "# rotated 2024-05-01\n"
        + base64.b64encode(K1).decode()
        + "\n\n  "
        + base64.b64encode(K2).decode()
        + "  \n"
    )
    ring = load_keyring(path)
    assert len(ring.fingerprints) == 2
    assert ring.fingerprints[0] == Keyring([K1]).fingerprints[0]
    assert K1.hex() not in repr(ring)
    assert base64.b64encode(K1).decode() not in repr(ring)


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        (b"", "no key"),
        (b"# only a comment\n", "no key"),
        (base64.b64encode(K1) + b"\nnot base64!\n", "line 2: not base64"),
        (base64.b64encode(b"short") + b"\n", "line 1: a key is 16, 24 or 32 bytes, not 5"),
        (base64.b64encode(bytes(33)) + b"\n", "line 1: a key is 16, 24 or 32 bytes, not 33"),
        ("é\n".encode(), "not ASCII"),
        (b"\n".join([base64.b64encode(bytes([i]) * 16) for i in range(17)]), "at most 16"),
        (b"A" * 70_000, "larger than"),
    ],
)
def test_a_bad_keyring_file_is_a_value_error_naming_file_and_line(
    tmp_path: Path, content: bytes, needle: str
) -> None:
    path = tmp_path / "bad-keys"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=needle) as info:
        load_keyring(path)
    assert str(path) in str(info.value)
    with pytest.raises(ValueError, match=needle):
        SwimConfig.from_mapping({"keyring_file": str(path)})


def test_a_missing_keyring_file_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"missing: cannot read"):
        SwimConfig.from_mapping({"keyring_file": str(tmp_path / "missing")})
    for bad in (123, "", ["a"], True):
        with pytest.raises(ValueError, match="keyring_file"):
            SwimConfig.from_mapping({"keyring_file": bad})


def test_the_setting_round_trips_and_never_shows_the_keys(tmp_path: Path) -> None:
    c = SwimConfig.from_mapping({"keyring_file": keyfile(tmp_path, K1)})
    assert c.keyring is not None
    assert "keyring" not in c.as_dict() or c.as_dict().keys() >= {"keyring_file"}
    assert set(c.as_dict()) == set(SwimConfig().as_dict())
    again = SwimConfig.from_mapping(c.as_dict())
    assert again == c
    assert again.keyring is not None
    assert K1.hex() not in repr(c)
    assert SwimConfig().keyring is None


# ---- sealing -----------------------------------------------------------------------------


def test_seal_and_open_round_trip_and_labels_keep_kinds_apart() -> None:
    ring = Keyring([K1])
    sealed = ring.seal(b"hello", UDP)
    assert sealed[0] == SEAL_VERSION
    assert len(sealed) == len(b"hello") + OVERHEAD
    assert ring.open_untrusted(sealed, UDP) == b"hello"
    assert ring.seal(b"hello", UDP) != sealed  # a fresh nonce every time
    with pytest.raises(BadMessage, match="auth"):
        ring.open_untrusted(sealed, TCP_REQUEST)
    with pytest.raises(BadMessage, match="auth"):
        Keyring([K2]).open_untrusted(sealed, UDP)


def test_rotation_every_key_opens_the_first_seals() -> None:
    old, both_old_first, both_new_first, new = (
        Keyring([K1]),
        Keyring([K1, K2]),
        Keyring([K2, K1]),
        Keyring([K2]),
    )
    for sealer, opener in [(old, both_new_first), (both_new_first, both_old_first),
                           (both_old_first, both_new_first), (new, both_old_first)]:  # fmt: skip
        assert opener.open_untrusted(sealer.seal(b"x", UDP), UDP) == b"x"
    with pytest.raises(BadMessage):
        old.open_untrusted(new.seal(b"x", UDP), UDP)


@settings(max_examples=500, deadline=None)
@given(st.binary(max_size=3000))
def test_any_bytes_open_to_plaintext_or_an_auth_drop(data: bytes) -> None:
    ring = Keyring([K1, K2])
    with pytest.raises(BadMessage) as info:  # forging a tag by chance: 2^-128
        ring.open_untrusted(data, UDP)
    assert info.value.reason == "auth"


@settings(max_examples=300, deadline=None)
@given(st.binary(min_size=0, max_size=200), st.data())
def test_a_sealed_packet_changed_anywhere_never_opens(plain: bytes, data: st.DataObject) -> None:
    ring = Keyring([K3])
    sealed = bytearray(ring.seal(plain, UDP))
    i = data.draw(st.integers(0, len(sealed) - 1))
    sealed[i] ^= data.draw(st.integers(1, 255))
    cut = data.draw(st.integers(0, len(sealed)))
    forged = bytes(sealed[:cut]) if data.draw(st.booleans()) else bytes(sealed)
    with pytest.raises(BadMessage, match="auth"):
        ring.open_untrusted(forged, UDP)


def test_sealed_tcp_frames_round_trip_and_refuse_plain_ones() -> None:
    ring = Keyring([K1])
    frame = pushpull_request(3, [], join=True)
    sealed = seal(ring, frame, TCP_REQUEST)
    assert set(sealed) == {"k", "sealed"}
    assert open_sealed(ring, msgpack.unpackb(msgpack.packb(sealed)), TCP_REQUEST, 1 << 20) == frame
    assert seal(None, frame, TCP_REQUEST) is frame
    for bad in (frame, {"k": "swim", "sealed": "text"}, {"k": "swim", "sealed": b"x" * 40}):
        with pytest.raises(BadMessage, match="auth"):
            open_sealed(ring, bad, TCP_REQUEST, 1 << 20)
    with pytest.raises(BadMessage, match="auth"):
        open_sealed(ring, sealed, TCP_REPLY, 1 << 20)
    inner = {"k": "swim", "sealed": ring.seal(msgpack.packb([1, 2]), TCP_REQUEST)}
    with pytest.raises(BadMessage, match="malformed"):
        open_sealed(ring, inner, TCP_REQUEST, 1 << 20)


# ---- machines and the simulated network ----------------------------------------------------


def test_without_a_keyring_packets_are_exactly_the_plain_format() -> None:
    net = SimNetwork(2, seed=1)
    m0 = net.machine(0)
    out = RtsimDoor(m0).receive(encode(Ping(1, 0, 1, *net.address(1))), net.address(1), 1.0)
    (dg,) = out.datagrams
    data = RtsimDoor(m0).send(dg)
    assert data[0] == VERSION
    assert decode_untrusted(data)


def test_with_a_keyring_every_packet_is_sealed_and_fits_the_cap(tmp_path: Path) -> None:
    cfg = keyed(tmp_path, K1)
    net = SimNetwork(6, cfg, seed=2, bootstrap=False)
    sizes: list[int] = []
    net.on_event = None
    net.run_for(10.0)
    for i in net.ids():
        m = net.machine(i)
        assert m.counters.summary()["dropped_auth"] == 0
        sizes += [m.counters.sent_bytes[k] // max(1, m.counters.sent_packets[k])
                  for k in m.counters.sent_packets]  # fmt: skip
    m0 = net.machine(0)
    plain = encode(Ping(1, 0, 1, *net.address(1)))
    sealed = cfg.keyring.seal(plain, UDP)  # type: ignore[union-attr]
    (dg,) = RtsimDoor(m0).receive(sealed, net.address(1), net.now).datagrams
    data = RtsimDoor(m0).send(dg)
    assert data[0] == SEAL_VERSION
    assert decode_untrusted(cfg.keyring.open_untrusted(data, UDP))  # type: ignore[union-attr]
    assert RtsimDoor(m0).receive(plain, net.address(1), net.now).datagrams == ()
    assert m0.counters.summary()["dropped_auth"] == 1
    assert max(sizes) <= cfg.max_packet_bytes


def all_joined(net: SimNetwork, ids: list[int]) -> bool:
    return all(net.state(i, j) == "alive" for i in ids for j in ids if i != j)


def test_a_keyed_cluster_converges_and_detects_a_kill(tmp_path: Path) -> None:
    net = SimNetwork(4, keyed(tmp_path, K1), seed=3, bootstrap=False)
    assert net.until(lambda: all_joined(net, net.ids()), timeout=30)
    net.kill(3)
    assert net.until(lambda: all(net.state(i, 3) == "dead" for i in range(3)), timeout=60)


@pytest.mark.parametrize("newcomer_keyed", [False, True])
def test_members_with_and_without_a_key_do_not_form_a_cluster(
    tmp_path: Path, newcomer_keyed: bool
) -> None:
    with_key, plain = keyed(tmp_path, K1), SwimConfig()
    net = SimNetwork(3, plain if newcomer_keyed else with_key, seed=4, bootstrap=False)
    assert net.until(lambda: all_joined(net, [0, 1, 2]), timeout=30)
    new = net.add(with_key if newcomer_keyed else plain)
    # Member 0 is told of the newcomer out of band, so UDP flows both ways, not only TCP.
    m = net.machine(new)
    net.machine(0).preload([StateEntry(new, *m.address, 0, MemberState.ALIVE, m.boot)])
    net.run_for(60.0)  # many re-joins (every period while alone), probes and push/pulls
    assert [m.node_id for m in net.members(new)] == [new]
    assert net.state(0, new) == "dead"
    assert net.state(new, 0) is None
    refused = m.counters.summary()
    assert refused["dropped_auth" if newcomer_keyed else "dropped_malformed"] > 0


def test_a_key_rotation_never_splits_the_cluster(tmp_path: Path) -> None:
    """Old key first everywhere, the new one second; then a member moves the new one first."""
    net = SimNetwork(3, keyed(tmp_path, K1, K2), seed=5, bootstrap=False)
    assert net.until(lambda: all_joined(net, [0, 1, 2]), timeout=30)
    new = net.add(keyed(tmp_path, K2, K1))
    assert net.until(lambda: all_joined(net, [0, 1, 2, new]), timeout=60)
    stranger = net.add(keyed(tmp_path, K3))
    net.run_for(30.0)
    assert [m.node_id for m in net.members(stranger)] == [stranger]


# ---- the driver, on real sockets -----------------------------------------------------------


async def test_real_members_with_and_without_a_key_do_not_form_a_cluster(tmp_path: Path) -> None:
    with_key = keyed(tmp_path, K1, base=FAST)
    async with trio.open_nursery() as nursery:
        k0, _ = await nursery.start(run_member, with_key, 0, [], tmp_path / "e0")
        seed = [("127.0.0.1", k0.port)]
        k1, _ = await nursery.start(run_member, with_key, 1, seed, tmp_path / "e1")
        p2, _ = await nursery.start(run_member, FAST, 2, seed, tmp_path / "e2")
        with trio.fail_after(30):
            await k1.wait_members(lambda ms: len(ms) == 2 and all(m.state == "alive" for m in ms))
            # the plain member keeps re-joining, and the keyed seed keeps refusing it
            await wait_for_async(
                "the keyed seed to refuse the plain member 3 times",
                lambda: k0.counters()["dropped_auth"],
                until=lambda n: n >= 3,
            )
        assert [m.node_id for m in p2.members()] == [2]
        assert sorted(m.node_id for m in k0.members()) == [0, 1]
        nursery.cancel_scope.cancel()


async def test_handle_tcp_with_a_keyring_answers_sealed_and_refuses_plain(tmp_path: Path) -> None:
    cfg = keyed(tmp_path, K1, base=FAST)
    ring = cfg.keyring
    assert ring is not None
    async with open_swim(cfg, node_id=0, host="127.0.0.1", port=0, rng=random.Random(1)) as h:
        request = pushpull_request(7, [], join=True)
        refused = await h.handle_tcp(request)
        assert refused["ok"] is False
        assert h.counters()["dropped_auth"] == 1
        reply = await h.handle_tcp(seal(ring, request, TCP_REQUEST))
        assert set(reply) == {"k", "sealed"}
        opened = open_sealed(ring, reply, TCP_REPLY, 1 << 20)
        assert opened["ok"] is True
        assert opened["from"] == 0
