"""The defects the parser fuzzers found (fuzz/defects.md), each as a plain test of the parser's
documented error. The fuzzers' own inputs are replayed too (``test_replay``); these say what
the fix promises in words, and cover the callers the targets do not reach.
"""

from __future__ import annotations

import struct

import pytest
import trio
import trio.testing

from cluster.ground.errors import SettingsError
from cluster.ground.settings import find_config_file, load_settings, parse_settings_text
from cluster.hosts.hostfile import parse_hostfile
from fuzz import memberlist_seeds as seeds_ml
from scenarios import ScenarioError, parse_scenario
from swim import BadMessage, FrameError, SwimConfig, recv_frame
from swim.framing import MAX_VALUES
from swim.memberlist import codec as ml_codec
from swim.memberlist import encode_tags
from swim.memberlist.edge import FOREIGN_BASE, Edge

NO_USER = "~no-such-user-rtsim"


@pytest.mark.parametrize(
    ("text", "key"),
    [
        (f"runtime: {{conf_dir: '{NO_USER}/rt'}}", "runtime.conf_dir"),
        ("runtime: {conf_dir: './~no-such-user-rtsim'}", "runtime.conf_dir"),  # pathlib drops ./
        (f"runtime: {{data_dir: '{NO_USER}'}}", "runtime.data_dir"),
        (f"networking: {{hostfile: '{NO_USER}/hosts'}}", "networking.hostfile"),
        (f"viz: {{path: ['{NO_USER}/viz']}}", "viz.path"),
        (f"logging: {{events: '{NO_USER}/e.jsonl'}}", "logging.events"),
    ],
)
def test_a_path_under_no_users_home_is_a_settings_error(text: str, key: str) -> None:
    with pytest.raises(SettingsError, match=f"{key}: .* names no user's home directory"):
        parse_settings_text(text, "rt.yaml")


def test_paths_that_expand_or_hold_a_tilde_inside_still_load() -> None:
    settings = parse_settings_text("runtime: {conf_dir: a/~b, data_dir: ~/d}", "rt.yaml")
    paths = settings.paths()
    assert paths["conf_dir"] == "a/~b"
    assert not paths["data_dir"].startswith("~")


def test_flags_and_files_that_name_no_users_home_fail_in_one_line() -> None:
    with pytest.raises(SettingsError, match=r"data_dir: .* names no user's home directory"):
        load_settings("daemon", env={}, flags={"data_dir": f"{NO_USER}/data"})
    with pytest.raises(SettingsError, match="not a readable file"):
        find_config_file({"RT_SERVER_CONF": f"{NO_USER}/rt.yaml"})
    with pytest.raises(SettingsError, match="cannot read"):
        parse_hostfile(f"{NO_USER}/hosts", 9413)


@pytest.mark.parametrize("key", ["probe_interval", "tcp_timeout", "pushpull_interval"])
def test_a_duration_too_large_for_a_float_is_refused(key: str) -> None:
    huge = "1" + "0" * 400
    with pytest.raises(ValueError, match=f"'{key}' must be finite"):
        SwimConfig.from_mapping({key: int(huge)})
    with pytest.raises(SettingsError, match=f"swim: swim setting '{key}' must be finite"):
        parse_settings_text(f"swim: {{{key}: {huge}}}", "rt.yaml")
    with pytest.raises(ScenarioError, match=f"swim: swim setting '{key}' must be finite"):
        parse_scenario(f"nodes: 3\nswim: {{{key}: {huge}}}\n", "s.yaml")


async def _receive(body: bytes, max_bytes: int) -> object:
    stream = trio.testing.MemoryReceiveStream()
    stream.put_data(struct.pack(">I", len(body)) + body)
    stream.put_eof()
    return await recv_frame(stream, max_bytes)


async def test_a_frame_of_more_values_than_the_bound_is_refused_while_it_decodes() -> None:
    # A map holding lists of empty lists: each list under any length cap, too many in all.
    part = b"\xdc" + struct.pack(">H", 60_000) + b"\x90" * 60_000
    body = b"\x81\xa1x" + b"\xdc" + struct.pack(">H", 10) + part * 10
    with pytest.raises(FrameError, match=f"more than {MAX_VALUES} values"):
        await _receive(body, 8 << 20)
    fits = b"\x81\xa1x" + b"\xdc" + struct.pack(">H", 2) + part * 2
    assert len((await _receive(fits, 8 << 20))["x"]) == 2  # type: ignore[index]


# -- swim.memberlist (fuzz/defects.md 5 to 7; 8 is pinned in tests/swim/test_memberlist_codec.py)


def test_a_ping_keeps_a_port_without_an_address_through_its_encoding() -> None:
    ping = ml_codec.Ping(3, "rt-0", "", 7946, "serf-a")
    packet = ml_codec.encode_packet([ml_codec.encode_message(ping)], None)
    assert ml_codec.decode_packet(packet, None, 1400).messages == [ping]


def test_a_packet_of_compressed_compounds_holds_at_most_max_parts_messages() -> None:
    ping = ml_codec.encode_message(ml_codec.Ping(1, "rt-0"))
    wide = seeds_ml.compressed(seeds_ml.compound([ping] * 200))
    with pytest.raises(BadMessage, match="oversize: more than 255 messages"):
        ml_codec.decode_packet(seeds_ml.compound([wide, wide]), None, 65507)


def test_an_rtsim_tag_of_digits_int_refuses_names_no_id() -> None:
    edge = Edge(
        0,
        "rt-0",
        {},
        boot=lambda: 1,
        id_at=lambda host, port: None,
        max_names=9,
        drop=lambda reason: None,
        holds=lambda node: True,
    )
    meta = encode_tags({"rtsim": "²"})
    (alive,) = edge.inbound([ml_codec.Alive(1, "odd", "127.0.0.1", 1, meta, b"")], ("h", 1))
    assert alive.node >= FOREIGN_BASE  # defect 7: int("²") raised ValueError, out of the door
