"""Where each setting came from: default < file < RT_ environment < flag, recorded as applied
(``Settings.origin``); the paths in use with ``~`` expanded (``Settings.paths``)."""

from __future__ import annotations

from pathlib import Path

import pytest

import swim
from cluster.ground.errors import SettingsError
from cluster.ground.settings import Settings, load_settings

FILE = """
networking: {port: 9500, hostfile: ~/hosts}
runtime: {num_threads: 2, conf_dir: ~/.rt-test}
viz: {port: 8100}
compose: []
"""


@pytest.fixture
def conf(tmp_path: Path) -> Path:
    path = tmp_path / "rt.yaml"
    path.write_text(FILE)
    return path


def test_defaults_say_default() -> None:
    s = load_settings("embedded", env={})
    assert s.origin("networking.port") == "default"
    assert s.origin("viz.enabled") == "default (embedded)"
    assert load_settings("daemon", env={}).origin("viz.enabled") == "default (daemon)"
    assert s.origin("config_file") == "default"


def test_each_source_is_recorded_and_the_last_one_wins(conf: Path) -> None:
    env = {"RT_SERVER_CONF": str(conf), "RT_VIZ_PORT": "8200", "RT_VIZ_BIND": "0.0.0.0"}
    s = load_settings("daemon", env=env, flags={"port": 9600, "viz_bind": "127.0.0.2"})
    assert s.networking.port == 9600
    assert s.origin("networking.port") == "flag --port"
    assert s.origin("networking.hostfile") == f"file {conf}"
    assert s.origin("runtime.num_threads") == f"file {conf}"
    assert s.origin("runtime.learning_rate") == "default"
    assert (s.viz.port, s.origin("viz.port")) == (8200, "env RT_VIZ_PORT")
    assert (s.viz.bind, s.origin("viz.bind")) == ("127.0.0.2", "flag --viz-bind")
    assert s.origin("viz.enabled") == "flag --viz-bind"  # --viz-bind turns the dashboard on
    assert s.origin("compose") == f"file {conf}"
    assert s.origin("config_file") == "env RT_SERVER_CONF"


def test_flags_of_every_section(conf: Path, tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.write_text(swim.new_key_line() + "\n")
    flags = {
        "viz": False, "hostfile": "h.txt", "node_id": 3, "host": "127.0.0.9", "events": "e.jsonl",
        "log_file": "n.log", "data_dir": "/tmp/d", "keyring": str(keys),
    }  # fmt: skip
    s = load_settings("daemon", env={}, flags=flags, config_file=conf)
    assert s.origin("viz.enabled") == "flag --viz/--no-viz"
    assert s.origin("networking.node_id") == "flag --node-id"
    assert s.origin("logging.events") == "flag --events"
    assert s.origin("logging.file") == "flag --log-file"
    assert s.origin("runtime.data_dir") == "flag --data-dir"
    assert s.origin("swim.keyring_file") == "flag --keyring"
    assert s.origin("config_file") == "flag --config"


def test_a_refused_variable_records_nothing_and_raises() -> None:
    with pytest.raises(SettingsError, match="RT_VIZ_PORT"):
        load_settings("embedded", env={"RT_VIZ_PORT": "eighty"})


def test_origins_do_not_change_equality_or_the_dict(conf: Path) -> None:
    a = load_settings("embedded", env={}, config_file=conf)
    b = load_settings("embedded", env={"RT_SERVER_CONF": str(conf)})
    assert a == b  # the same values, read through different doors
    assert "origins" not in a.to_dict()


def test_paths_are_expanded(conf: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    s = load_settings("embedded", env={}, config_file=conf, flags={})
    paths = s.paths()
    assert paths["conf_dir"] == str(tmp_path / ".rt-test")
    assert paths["hostfile"] == str(tmp_path / "hosts")
    assert paths["data_dir"] == str(tmp_path / ".rt-test" / "data" / "node-9500")
    assert paths["config_file"] == str(conf)
    assert "~" not in "".join(v for v in paths.values() if v)
    assert Settings().paths()["hostfile"] is None
    assert Settings().paths()["config_file"] is None
