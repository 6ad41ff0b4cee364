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
from cluster.node.hostfile import parse_hostfile
from scenarios import ScenarioError, parse_scenario
from swim import FrameError, SwimConfig, recv_frame
from swim.framing import MAX_VALUES

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
