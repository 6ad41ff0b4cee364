"""Settings that must be refused: every field ranged in every source, YAML limits, start-up
errors as one line and a non-zero exit (never a traceback, a hang or the wrong culprit)."""

from __future__ import annotations

import errno
import logging
import math
import os
import re
import socket
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cluster.ground.errors import SettingsError
from cluster.ground.settings import (
    MAX_COMPOSE_ENTRIES,
    MAX_CONFIG_BYTES,
    Settings,
    load_settings,
    parse_settings_text,
)
from cluster.hosts.hostfile import parse_hostfile, resolve_identity
from cluster.node import cli, flags, process
from tests.support.yamlbombs import ALIAS_BOMB

ROOT = Path(__file__).resolve().parents[2]
# The bomb inside a compose entry: before, it loaded in microseconds and start-up composing
# then expanded it (100 % CPU, gigabytes, no dashboard, SIGTERM ignored).
CONFIG_BOMB = (
    "compose:\n  - mod_name: rt_safe_bdev\n    pool_name: bomb\n"
    + "".join(f"    {line}\n" for line in ALIAS_BOMB.splitlines())
    + "    members: *i\n"
)


def load_text(tmp_path: Path, text: str, **kw: object) -> Settings:
    path = tmp_path / "rt.yaml"
    path.write_text(text)
    return load_settings(env={"RT_SERVER_CONF": str(path)}, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("networking: {node_id: -5}", "networking.node_id: -5 is out of range"),
        ("networking: {node_id: 2147483648}", "networking.node_id: 2147483648 is out of range"),
        ("networking: {node_id: 1000000000000000000000000}", "networking.node_id"),
        ("networking: {port: -1}", "networking.port: -1 is out of range"),
        ("networking: {port: 65536}", "networking.port"),
        ("viz: {port: -1}", "viz.port: -1 is out of range"),
        ("viz: {max_threads: 0}", "viz.max_threads: 0 is out of range"),
        ("viz: {max_threads: 100000000000}", "viz.max_threads"),
        ("runtime: {num_threads: 0}", "runtime.num_threads: 0 is out of range"),
        ("runtime: {num_threads: -4}", "runtime.num_threads: -4 is out of range"),
        ("runtime: {worker_count: -1}", "runtime.worker_count"),
        ("runtime: {learning_rate: .nan}", "runtime.learning_rate: expected a finite number"),
        ("runtime: {learning_rate: 0}", "runtime.learning_rate: 0 is out of range"),
        ("runtime: {learning_rate: 1.5}", "runtime.learning_rate"),
        ("workload: {rate: .inf}", "workload.rate: expected a finite number"),
        ("workload: {rate: -1}", "workload.rate"),
        ("workload: {rate: 1e9}", "workload.rate"),
        ("workload: {io_size: -4096}", "workload.io_size: -4096 is out of range"),
        ("workload: {io_size: 0}", "workload.io_size"),
        ("workload: {io_size: 67108865}", "workload.io_size"),
        ('logging: {file: "a\\0b"}', "logging.file: longer than 4096 characters or holds a NUL"),
        ("runtime: {data_dir: " + "x" * 5000 + "}", "runtime.data_dir: longer than"),
        ("runtime: {modules: [" + ",".join(["m"] * 100) + "]}", "runtime.modules: more than"),
        ("logging: {level: loud}", "logging.level: expected one of"),
        ("networking: {port: 2024-01-01}", "networking.port: expected an integer"),
        ("networking: {port: '9000'}", "networking.port: expected an integer"),
    ],
)
def test_out_of_range_values_in_the_file_name_the_file_and_key(
    tmp_path: Path, text: str, needle: str
) -> None:
    with pytest.raises(SettingsError) as info:
        load_text(tmp_path, text + "\n")
    assert needle in str(info.value)
    assert str(tmp_path / "rt.yaml") in str(info.value)


def test_the_ranges_hold_at_their_edges(tmp_path: Path) -> None:
    s = load_text(
        tmp_path,
        "networking: {node_id: 2147483647, port: 65535}\nviz: {port: 0, max_threads: 1024}\n"
        "runtime: {num_threads: 1, learning_rate: 1}\n"
        "workload: {rate: 0, io_size: 67108864}\n",
    )
    assert (s.networking.node_id, s.networking.port, s.viz.port) == (2**31 - 1, 65535, 0)
    assert (s.runtime.num_threads, s.runtime.learning_rate) == (1, 1.0)
    assert (s.workload.rate, s.workload.io_size) == (0.0, 64 << 20)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"RT_VIZ_PORT": " 8080"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_PORT": "+8080"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_PORT": "8_080"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_PORT": "\u0668080"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_MAX_THREADS": "99999999999999999999"}, "viz.max_threads"),
        ({"RT_VIZ_MAX_THREADS": "-4"}, "viz.max_threads"),
        ({"RT_VIZ_BIND": "a\0b"}, "RT_VIZ_BIND"),
    ],
)
def test_environment_values_are_parsed_strictly(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    with pytest.raises(SettingsError, match=needle):
        load_settings(env={"HOME": str(tmp_path), **env})


@pytest.mark.parametrize(
    ("flags", "needle"),
    [
        ({"node_id": -5}, "networking.node_id"),
        ({"node_id": 2**40}, "networking.node_id"),
        ({"port": 70000}, "networking.port"),
        ({"viz_port": -1}, "viz.port"),
        ({"host": "x" * 5000}, "networking.host"),
    ],
)
def test_flags_out_of_range_are_settings_errors(
    tmp_path: Path, flags: dict[str, object], needle: str
) -> None:
    with pytest.raises(SettingsError, match=needle):
        load_settings(env={"HOME": str(tmp_path)}, flags=flags)


def test_no_section_can_be_made_out_of_range_by_replace() -> None:
    s = Settings()
    with pytest.raises(SettingsError, match=r"workload\.rate"):
        replace(s.workload, rate=float("inf"))
    with pytest.raises(SettingsError, match=r"viz\.max_threads"):
        replace(s.viz, max_threads=10**9)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (["start", "--port", "-1"], "--port: port"),
        (["start", "--port", " 9413"], "--port: port"),
        (["start", "--node-id", "-5"], "--node-id: node id"),
        (["start", "--node-id", "99999999999"], "--node-id: node id"),
        (["start", "--viz-port", "65536"], "--viz-port: port"),
        (["stop", "--timeout", "nan"], "--timeout: seconds"),
        (["monitor", "--interval", "-1"], "--interval: seconds"),
        (["monitor", "--interval", "0"], "--interval: seconds"),
    ],
)
def test_command_line_numbers_are_one_line_and_status_2(
    argv: list[str], needle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.build_parser().parse_args(argv)
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert needle in err
    assert err.count("\n") == 1


def test_keyring_flag_sets_the_swim_keyring_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import swim

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RT_SERVER_CONF", raising=False)
    keys = tmp_path / "keys"
    keys.write_text(swim.new_key_line() + "\n")
    args = cli.build_parser().parse_args(["start", "--keyring", str(keys)])
    assert flags.settings_of(args).swim["keyring_file"] == str(keys)
    assert cli.main(["start", "--keyring", str(tmp_path / "missing")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"rt_run: --keyring: swim: keyring file {tmp_path / 'missing'}")
    assert err.count("\n") == 1


# -- YAML limits --------------------------------------------------------------------------


def test_an_alias_bomb_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"rt\.yaml: not valid YAML: line 4, column 8: anchors"):
        load_text(tmp_path, CONFIG_BOMB)


def test_a_config_file_over_the_limit_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "rt.yaml"
    with path.open("w") as f:
        f.write("# padding\n" * (MAX_CONFIG_BYTES // 10 + 1))
    with pytest.raises(SettingsError) as info:
        load_settings(env={"RT_SERVER_CONF": str(path)})
    assert str(info.value) == (
        f"{path}: larger than {MAX_CONFIG_BYTES} bytes, the limit of a configuration file"
    )


def test_a_compose_section_is_bounded_and_a_date_stays_text(tmp_path: Path) -> None:
    entry = "  - {mod_name: rt_bdev, pool_name: p, capacity: 64K}\n"
    with pytest.raises(SettingsError, match=f"more than {MAX_COMPOSE_ENTRIES} pool entries"):
        load_text(tmp_path, "compose:\n" + entry * (MAX_COMPOSE_ENTRIES + 1))
    s = load_text(tmp_path, "compose:\n  - {mod_name: rt_bdev, pool_name: d, when: 2024-01-01}\n")
    assert s.compose[0]["when"] == "2024-01-01"


SECTION_KEYS = {
    "networking": ["host", "port", "hostfile", "node_id"],
    "runtime": ["num_threads", "worker_count", "learning_rate", "modules", "data_dir"],
    "viz": ["enabled", "port", "bind", "max_threads", "path"],
    "logging": ["level", "file", "events"],
    "workload": ["enabled", "rate", "io_size", "pools"],
    "compose": [],
    "swim": ["probe_interval", "indirect_checks"],
    "bogus": [],
}
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)
SECTION = st.sampled_from(sorted(SECTION_KEYS)).flatmap(
    lambda name: st.tuples(
        st.just(name),
        st.one_of(
            VALUES,
            st.dictionaries(st.sampled_from([*SECTION_KEYS[name], "x"]), VALUES, max_size=3),
            st.lists(st.dictionaries(st.sampled_from(["mod_name", "pool_name"]), VALUES)),
        ),
    )
)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(SECTION, max_size=4).map(dict), VALUES))
def test_any_mapping_is_settings_or_one_settings_error(data: object) -> None:
    try:
        s = parse_settings_text(yaml.safe_dump(data), "gen.yaml")
    except SettingsError as exc:
        message = str(exc)
    else:
        assert -1 <= s.networking.node_id < 2**31
        assert 0 <= s.networking.port <= 65535
        assert 1 <= s.viz.max_threads <= 1024
        assert 0 < s.runtime.learning_rate <= 1
        assert math.isfinite(s.workload.rate)
        return
    assert "\n" not in message


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab:-[]{}&*!|>'\"#\n 0.9e", max_size=40))
def test_any_text_is_settings_or_one_settings_error(text: str) -> None:
    try:
        parse_settings_text(text, "gen.yaml")
    except SettingsError:
        pass


# -- start-up failures --------------------------------------------------------------------


@pytest.fixture
def quiet_logging(monkeypatch: pytest.MonkeyPatch) -> None:
    """run_node without replacing the test run's own log handlers."""
    monkeypatch.setattr(process, "configure_logging", lambda settings: None)


def test_a_log_file_that_cannot_be_opened_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in (tmp_path, tmp_path / "missing" / "node.log"):  # a directory; no such folder
        s = load_settings(env={"HOME": str(tmp_path)}, flags={"log_file": str(bad)})
        assert process.run_node(s) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"rt_run: logging.file {bad}: cannot open: ")
        assert err.count("\n") == 1


def test_an_unopenable_events_file_is_not_blamed_on_the_port(
    tmp_path: Path, quiet_logging: None, caplog: pytest.LogCaptureFixture
) -> None:
    events = tmp_path / "missing" / "events.jsonl"
    flags = {"port": 0, "events": str(events), "data_dir": str(tmp_path / "d"), "viz": False}
    s = load_settings(env={"HOME": str(tmp_path)}, flags=flags)
    with caplog.at_level(logging.ERROR):
        assert process.run_node(replace(s, workload=replace(s.workload, enabled=False))) == 1
    assert f"cannot start: {events}: No such file or directory" in caplog.text
    assert "runtime port" not in caplog.text


@pytest.mark.parametrize(
    ("exc", "needle"),
    [
        (OSError(errno.EADDRINUSE, "Address already in use"), "runtime port 127.0.0.1:9413"),
        (OSError(errno.EADDRNOTAVAIL, "Cannot assign"), "runtime port 127.0.0.1:9413"),
        (OSError(errno.EACCES, "Permission denied"), "runtime port 127.0.0.1:9413"),
        (OSError(errno.EACCES, "Permission denied", "/data"), "cannot start: /data: Permission"),
        (OSError(errno.EMFILE, "Too many open files"), "cannot start: OSError: Too many open"),
        (socket.gaierror(-2, "Name or service not known"), "runtime address '127.0.0.1'"),
    ],
)
def test_only_bind_errors_name_the_runtime_port(exc: OSError, needle: str) -> None:
    status, message = process._start_failure(exc, Settings())
    assert status == 1
    assert needle in message


@pytest.mark.slow
def test_rt_run_with_an_alias_bomb_config_exits_with_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "rt.yaml"
    conf.write_text(CONFIG_BOMB)
    env = {k: v for k, v in os.environ.items() if not k.startswith("RT_")}
    out = subprocess.run(
        [sys.executable, "-m", "cluster.node.cli", "start", "--no-viz", "--config", str(conf)],
        cwd=ROOT,
        env={**env, "HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,  # before the fix: 100 % CPU and gigabytes, no exit
        check=False,
    )
    assert out.returncode == 2
    assert out.stderr == (
        f"rt_run: {conf}: not valid YAML: line 4, column 8: anchors (&a) are not allowed\n"
    )


# -- the hostfile -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("127.0.0.1:\u00b2\n".encode(), ":1: expected host[:port]"),  # int("²") raised
        ("127.0.0.1:\u0669\u0669\n".encode(), ":1: expected host[:port]"),  # Arabic-Indic 99
        (b"127.0.0.1:+9413\n", ":1: expected host[:port]"),
        (b"127.0.0.1:0\n", ":1: expected host[:port]"),
        (b"\xff\xfe127.0.0.1\n", "not UTF-8 text"),  # UnicodeDecodeError before
        (b"# pad\n" * 200_000, "larger than 1048576 bytes"),
    ],
)
def test_a_hostfile_is_parsed_strictly(tmp_path: Path, content: bytes, needle: str) -> None:
    path = tmp_path / "hosts"
    path.write_bytes(content)
    with pytest.raises(SettingsError, match=re.escape(needle)):
        parse_hostfile(str(path), 9413)


def test_a_host_name_the_resolver_cannot_encode_is_just_another_host(tmp_path: Path) -> None:
    path = tmp_path / "hosts"
    path.write_text(f"{'a' * 300}:9000\n127.0.0.1:9413\n")  # idna raised UnicodeError
    flags = {"hostfile": str(path), "port": 9413}
    s = load_settings(env={"HOME": str(tmp_path)}, flags=flags)
    assert resolve_identity(s, induct=False) == (1, [("a" * 300, 9000)])
