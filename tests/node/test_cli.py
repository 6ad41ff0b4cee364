"""rt_run without a running node: parsing (legacy forms included), refresh, config, errors."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from cluster.local.ports import free_port
from cluster.node import cli, flags, nodeclient


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RT_SERVER_CONF", raising=False)


@pytest.mark.parametrize(
    ("argv", "fn"),
    [
        (["start"], cli.cmd_start),
        (["runtime", "start"], cli.cmd_start),
        (["stop"], nodeclient.cmd_stop),
        (["runtime", "stop"], nodeclient.cmd_stop),
        (["restart"], cli.cmd_restart),
        (["runtime", "restart"], cli.cmd_restart),
        (["refresh"], cli.cmd_refresh),
        (["repo", "refresh"], cli.cmd_refresh),
        (["compose", "list"], nodeclient.cmd_compose),
        (["config", "export", "--path", "x"], cli.cmd_config),
        (["migrate", "800.0", "--to", "1"], nodeclient.cmd_migrate),
        (["monitor", "--once", "--json"], nodeclient.cmd_monitor),
    ],
)
def test_flat_and_legacy_forms_resolve_to_the_same_handlers(argv: list[str], fn: object) -> None:
    assert cli.build_parser().parse_args(argv).fn is fn


def test_viz_flags_on_start_and_restart() -> None:
    for cmd in ("start", "restart"):
        args = cli.build_parser().parse_args([cmd, "--viz-port", "0", "--viz-bind", "127.0.0.1"])
        s = flags.settings_of(args)
        assert (s.viz.enabled, s.viz.port, s.viz.bind) == (True, 0, "127.0.0.1")
        assert (
            flags.settings_of(cli.build_parser().parse_args([cmd, "--no-viz"])).viz.enabled is False
        )
    with pytest.raises(SystemExit):
        cli.build_parser().parse_args(["start", "--viz", "--no-viz"])


def test_nested_forms_have_no_compose_config_migrate_monitor() -> None:
    for bad in (["runtime", "compose"], ["runtime", "monitor"], ["repo", "config"]):
        with pytest.raises(SystemExit):
            cli.build_parser().parse_args(bad)


def test_stop_without_a_running_node_fails_clearly(capsys: pytest.CaptureFixture[str]) -> None:
    port = free_port()
    assert cli.main(["stop", "--port", str(port)]) == 1
    assert f"no node is running at 127.0.0.1:{port}" in capsys.readouterr().err


def test_monitor_and_compose_list_without_a_node_fail_clearly(
    capsys: pytest.CaptureFixture[str],
) -> None:
    port = str(free_port())
    assert cli.main(["monitor", "--once", "--port", port]) == 1
    assert cli.main(["compose", "list", "--port", port]) == 1
    assert capsys.readouterr().err.count("no node is running") == 2


def test_refresh_lists_modules_methods_routes_and_assets(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert cli.main(["repo", "refresh"]) == 0
    out = capsys.readouterr().out
    assert "rt_admin" in out
    assert "methods: monitor, compose, destroy" in out
    assert "assets:" in out


def test_config_export_round_trips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    conf = tmp_path / "in.yaml"
    conf.write_text("viz: {port: 9123}\nworkload: {rate: 5}\n")
    out = tmp_path / "out.yaml"
    assert cli.main(["config", "export", "--path", str(out), "--config", str(conf)]) == 0
    exported = yaml.safe_load(out.read_text())
    assert exported["viz"]["port"] == 9123
    assert exported["workload"]["rate"] == 5.0
    # what we write, we read back
    from cluster.ground.settings import load_settings

    again = load_settings("daemon", env={"RT_SERVER_CONF": str(out)})
    assert again.viz.port == 9123


def test_bad_config_is_a_clear_error_not_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    conf = tmp_path / "bad.yaml"
    conf.write_text("viz: {port: many}\n")
    assert cli.main(["config", "export", "--config", str(conf)]) == 2
    err = capsys.readouterr().err
    assert "viz.port: expected an integer" in err
    assert "Traceback" not in err


def test_compose_file_that_is_not_a_list(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("compose: nope\n")
    assert cli.main(["compose", str(f), "--port", str(free_port())]) == 1
    assert "expected a compose section" in capsys.readouterr().err


def test_prepare_parses_a_start_and_reads_its_settings_ahead(tmp_path: Path) -> None:
    # The zygote prepares each node's start before it forks (issue 33); the node then runs
    # from the same settings main() would have read itself.
    cfg = tmp_path / "node.yaml"
    cfg.write_text("workload: {enabled: false}\nswim: {probe_interval: 0.5}\n")
    argv = ["start", "--port", "7001", "--node-id", "3", "--viz-port", "0", "--config", str(cfg)]
    prepared = cli.prepare(argv)
    assert prepared is not None
    assert prepared.settings == flags.settings_of(cli.build_parser().parse_args(argv))
    assert prepared.settings.networking.node_id == 3
    assert prepared.settings.workload.enabled is False


@pytest.mark.parametrize(
    "argv",
    [
        ["stop"],  # not a start: main does it
        ["start", "--port", "not-a-port"],  # argparse would print and exit 2
        ["start", "--config", "/nonexistent/node.yaml"],  # a SettingsError
        ["start", "--no-such-flag"],
    ],
)
def test_prepare_leaves_what_would_fail_or_is_no_start_to_main(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.prepare(argv) is None
    assert capsys.readouterr() == ("", "")  # main reports it, once, when the node runs


def test_a_failing_start_the_zygote_could_not_prepare_is_reported_by_the_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["start", "--config", str(tmp_path / "missing.yaml")]
    assert cli.main(argv, cli.prepare(argv)) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--clock-rate", "3"], "argument --clock-rate: clock rate: 3 is out of range"),
        (["--clock-rate", "x"], "argument --clock-rate: clock rate: expected a number"),
        (["--clock-offset=-31622401"], "argument --clock-offset: clock offset: -3.16224e+07"),
    ],
)
def test_a_clock_flag_out_of_range_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        cli.main(["start", *argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert len(err.strip().splitlines()) == 1


def test_the_clock_flags_reach_the_node_as_a_run_option() -> None:
    args = cli.build_parser().parse_args(["start", "--clock-offset=-86400", "--clock-rate", "2"])
    assert (args.clock_offset, args.clock_rate) == (-86400.0, 2.0)
    assert "clock_offset" not in args.settings_flags  # not a setting (flags rule 2)
