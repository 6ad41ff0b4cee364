"""Settings precedence: default < file < RT_ environment < command-line flags."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.ground.errors import SettingsError
from cluster.ground.settings import find_config_file, load_settings


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "rt.yaml"
    path.write_text(text)
    return path


def test_builtin_defaults_without_any_file(tmp_path: Path) -> None:
    s = load_settings("daemon", env={"HOME": str(tmp_path)})
    assert s.source == ""
    assert s.networking.port == 9413
    assert s.viz.port == 8080
    assert s.viz.bind == "127.0.0.1"
    assert s.viz.max_threads == 16
    assert s.runtime.learning_rate == 0.2
    assert s.compose == ()


def test_viz_default_depends_on_launch_mode(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert load_settings("daemon", env=env).viz.enabled is True
    assert load_settings("embedded", env=env).viz.enabled is False


def test_home_file_is_found_and_rt_server_conf_wins(tmp_path: Path) -> None:
    (tmp_path / ".rt").mkdir()
    (tmp_path / ".rt" / "rt.yaml").write_text("viz: {port: 9000}\n")
    other = write(tmp_path, "viz: {port: 9100}\n")
    assert load_settings(env={"HOME": str(tmp_path)}).viz.port == 9000
    env = {"HOME": str(tmp_path), "RT_SERVER_CONF": str(other)}
    assert load_settings(env=env).viz.port == 9100


def test_missing_rt_server_conf_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match="RT_SERVER_CONF"):
        find_config_file({"RT_SERVER_CONF": str(tmp_path / "nope.yaml")})


def test_file_then_environment_then_flags(tmp_path: Path) -> None:
    conf = write(tmp_path, "viz: {port: 9000, bind: 0.0.0.0, max_threads: 8}\n")
    env = {"RT_SERVER_CONF": str(conf), "RT_VIZ_PORT": "9200"}
    s = load_settings("daemon", env=env)
    assert (s.viz.port, s.viz.bind, s.viz.max_threads) == (9200, "0.0.0.0", 8)
    s = load_settings("daemon", env=env, flags={"viz_port": 9300, "viz_bind": "127.0.0.2"})
    assert (s.viz.port, s.viz.bind) == (9300, "127.0.0.2")


def test_rt_viz_enable_is_an_explicit_choice(tmp_path: Path) -> None:
    home = {"HOME": str(tmp_path)}
    assert load_settings("daemon", env={**home, "RT_VIZ_ENABLE": "0"}).viz.enabled is False
    assert load_settings("embedded", env={**home, "RT_VIZ_ENABLE": "1"}).viz.enabled is True
    # a flag is more explicit still
    s = load_settings("daemon", env={**home, "RT_VIZ_ENABLE": "0"}, flags={"viz": True})
    assert s.viz.enabled is True
    s = load_settings("daemon", env=home, flags={"viz": False})
    assert s.viz.enabled is False


def test_viz_port_and_bind_flags_imply_viz(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "RT_VIZ_ENABLE": "0"}
    assert load_settings("daemon", env=env, flags={"viz_port": 0}).viz.enabled is True
    assert load_settings("daemon", env=env, flags={"viz_bind": "127.0.0.1"}).viz.enabled is True


def test_file_viz_enabled_overrides_the_launch_default(tmp_path: Path) -> None:
    conf = write(tmp_path, "viz:\n  enabled: false\n")
    assert load_settings("daemon", env={"RT_SERVER_CONF": str(conf)}).viz.enabled is False


def test_former_prefix_is_not_read(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path), "CHI_VIZ_PORT": "7000", "HERMES_VIZ_PORT": "7001"}
    assert load_settings(env=env).viz.port == 8080


def test_rt_viz_path_is_colon_separated(tmp_path: Path) -> None:
    s = load_settings(env={"HOME": str(tmp_path), "RT_VIZ_PATH": "/a:/b::/c"})
    assert s.viz.path == ("/a", "/b", "/c")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("viz: {prot: 1}\n", "viz.prot: unknown key"),
        ("viz: {port: eighty}\n", "viz.port: expected an integer"),
        ("viz: {enabled: 1}\n", "viz.enabled: expected true or false"),
        ("runtime: {learning_rate: fast}\n", "runtime.learning_rate: expected a number"),
        ("bogus: {}\n", "bogus: unknown section"),
        ("logging: {level: loud}\n", "logging.level: expected one of"),
        ("compose: {a: 1}\n", "compose: expected a list"),
        ("compose:\n  - {pool_name: x}\n", "compose[0]"),
        ("viz: [1, 2]\n", "viz: expected a mapping"),
        ("viz: {port: [\n", "not valid YAML"),
        ("- 1\n- 2\n", "expected a mapping of sections"),
    ],
)
def test_bad_files_name_the_key_and_the_file(tmp_path: Path, text: str, needle: str) -> None:
    conf = write(tmp_path, text)
    with pytest.raises(SettingsError) as info:
        load_settings(env={"RT_SERVER_CONF": str(conf)})
    assert needle in str(info.value)
    assert str(conf) in str(info.value)


@pytest.mark.parametrize(
    ("env", "needle"),
    [
        ({"RT_VIZ_PORT": "http"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_PORT": "-1"}, "RT_VIZ_PORT"),
        ({"RT_VIZ_ENABLE": "yes"}, "RT_VIZ_ENABLE"),
        ({"RT_VIZ_MAX_THREADS": "0"}, "max_threads"),
        ({"RT_VIZ_PORT": "70000"}, "out of range"),
    ],
)
def test_bad_environment_values_are_clear_errors(
    tmp_path: Path, env: dict[str, str], needle: str
) -> None:
    with pytest.raises(SettingsError, match=needle):
        load_settings(env={"HOME": str(tmp_path), **env})


def test_compose_section_and_other_sections_are_read(tmp_path: Path) -> None:
    conf = write(
        tmp_path,
        "networking: {port: 9500, hostfile: /tmp/h}\n"
        "runtime: {num_threads: 2, learning_rate: 0.5}\n"
        "logging: {level: debug}\n"
        "workload: {enabled: false}\n"
        "compose:\n  - {mod_name: rt_bdev, pool_name: b, pool_id: '900.0', capacity: 1MB}\n",
    )
    s = load_settings(env={"RT_SERVER_CONF": str(conf)})
    assert s.networking.port == 9500
    assert s.runtime.workers == 2
    assert s.runtime.learning_rate == 0.5
    assert s.logging.level == "debug"
    assert s.workload.enabled is False
    assert s.compose[0]["capacity"] == "1MB"
    assert s.source == str(conf)


def test_command_line_paths_override_the_file(tmp_path: Path) -> None:
    conf = write(tmp_path, "runtime: {data_dir: /from/file}\nlogging: {events: /e.log}\n")
    flags = {"data_dir": str(tmp_path / "d"), "events": str(tmp_path / "ev")}
    s = load_settings("daemon", env={"RT_SERVER_CONF": str(conf)}, flags=flags)
    assert s.data_dir == tmp_path / "d"
    assert s.logging.events == str(tmp_path / "ev")
