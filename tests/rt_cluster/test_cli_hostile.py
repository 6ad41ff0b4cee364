"""Hostile command lines for rt_cluster (issue 12): every bad argument is one line on stderr
naming it and exit status 2; never a traceback, never a value out of range let through."""

from __future__ import annotations

import contextlib
import io
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from cluster.local import MAX_NODES
from cluster.local.record import NAME_RE
from scenarios.command import build_parser
from tests.support.clusters import run_main as run


def assert_one_line(err: str) -> None:
    assert "Traceback" not in err
    assert err.count("\n") == 1, err
    assert err.endswith("\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["up", "-n", "abc"], "-n/--nodes: expected an integer from 1 to 1024, got 'abc'"),
        (["up", "-n", "-5"], "-n/--nodes: -5 is out of range (from 1 to 1024)"),
        (["up", "-n", "0"], "-n/--nodes: 0 is out of range (from 1 to 1024)"),
        (["up", "-n", "99999999999"], "-n/--nodes: 99999999999 is out of range"),
        (["up", "-n", "9" * 5000], "-n/--nodes: expected an integer from 1 to 1024, got '9999"),
        (["up", "-n", "1e3"], "-n/--nodes: expected an integer from 1 to 1024, got '1e3'"),
        (
            ["up", "-n", "\u0663"],
            "-n/--nodes: expected an integer from 1 to 1024, got",
        ),  # an Arabic-Indic 3
        (["up", "-n", "1_0"], "-n/--nodes: expected an integer from 1 to 1024, got '1_0'"),
        (["up", "-n", " 3"], "-n/--nodes: expected an integer from 1 to 1024, got ' 3'"),
        (
            ["up", "-n", "3", "--base-port", "-1"],
            "--base-port: -1 is out of range (from 0 to 65535)",
        ),
        (
            ["up", "-n", "3", "--runtime-base-port", "70000"],
            "70000 is out of range (from 0 to 65535)",
        ),
        (["up", "-n", "3", "--runtime-base-port", "65535"], "ports 65535..65537 are not all valid"),
        (
            ["up", "-n", "1", "--timeout", "nan"],
            "--timeout: expected a number from 0.1 to 86400, got 'nan'",
        ),
        (
            ["up", "-n", "1", "--timeout", "inf"],
            "--timeout: expected a number from 0.1 to 86400, got 'inf'",
        ),
        (["up", "-n", "1", "--timeout", "0"], "--timeout: 0 is out of range"),
        (["up", "-n", "1", "--timeout", "1e9"], "--timeout: 1e+09 is out of range"),
        (["up", "-n", "1", "--timeout", "999999999"], "--timeout: 1e+09 is out of range"),
        (["down", "--grace", "-1"], "--grace: -1 is out of range"),
        (["up", "-n", "1", "--name", "a\nb"], "bad cluster name 'a\\nb'"),
        (["up", "-n", "1", "--name", "x" * 65], "bad cluster name 'xxxx"),
        (["up", "-n", "1", "--name", "ok\n"], "bad cluster name 'ok\\n'"),
        (["status", "--name", ".."], "bad cluster name '..'"),
        (["status", "--name", ""], "bad cluster name ''"),
        (["status", "--name", "../../etc"], "bad cluster name '../../etc'"),
        (["kill", "+1"], "not a node id: '+1'"),
        (["kill", "-1"], "not a node id: '-1'"),
        (["kill", "99999999999"], "not a node id: '99999999999'"),
        (["loss", "+1", "5"], "not a node id: '+1'"),
        (["loss", "all", "1_0"], "PERCENT: expected a number from 0 to 100, got '1_0'"),
        (["loss", "all", "5", "--peer", "x"], "not a node id: 'x'"),
        (["delay", "0", "1e400"], "MS: expected a finite number, got inf"),
        (["partition", "0,,1", "2"], "bad group '0,,1'"),
        (["partition", ",", "1"], "bad group ','"),
        (["scenario", "x", "--seed", "-1"], "--seed: -1 is out of range"),
        (["scenario", "x", "-n", "0"], "-n/--nodes: 0 is out of range"),
        (["up", "-n", "1", "--config", "/nonexistent/x.yaml"], "no such file"),
        (["up", "-n", "1", "--config", "x" * 5000], "cannot be read (File name too long)"),
        (["up", "-n", "1", "--frob"], "unknown option '--frob' (options: --help, --name,"),
        (["up", "-n", "1", "--frob\x1b[2J"], "unknown option '--frob\\x1b[2J' (options:"),
        (["up", "-n", "1", "-x"], "unrecognized arguments: -x"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(
    cluster_home: Path, argv: list[str], message: str
) -> None:
    code, out, err = run(*argv)
    assert code == 2, err
    assert message in err
    assert_one_line(err)
    assert out == ""
    assert not any(cluster_home.iterdir())  # nothing was started or written


OPTIONS = ["-n", "--name", "--base-port", "--runtime-base-port", "--config", "--no-wait",
           "--no-viz", "--foreground", "--timeout", "--grace", "--json", "--kill", "--induct",
           "--peer", "--no-keyring", "--seed", "--out", "--sim"]  # fmt: skip
NASTY = ["nan", "inf", "-inf", "1e309", "0x10", "\u0663", "1_000", " 5", "5 ", "+5", "-0", "0",
         "65535", "65536", "all", "0,1", "a,b", "", "\n", "-", "--", "..", "\x00",
         "9" * 400]  # fmt: skip
VALUES = st.one_of(
    st.sampled_from(NASTY),
    st.text(max_size=12),
    st.integers(-(10**15), 10**15).map(str),
    st.floats().map(repr),
)
COMMANDS = ["up", "status", "down", "list", "kill", "stop", "pause", "resume", "restart", "add",
            "partition", "heal", "loss", "delay", "scenario", "frobnicate"]  # fmt: skip
ARGV = st.builds(
    lambda cmd, rest: [cmd, *rest],
    st.sampled_from(COMMANDS),
    st.lists(st.one_of(st.sampled_from(OPTIONS), VALUES), max_size=6),
)


def _no_help(argv: list[str]) -> bool:
    return not any(a.startswith(("-h", "--h")) for a in argv)


@settings(max_examples=400, deadline=None)
@given(ARGV)
def test_the_parser_lets_through_only_values_in_range(argv: list[str]) -> None:
    assume(_no_help(argv))
    err = io.StringIO()
    code = None
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:
            code = exc.code
    if code is not None:
        assert code == 2
        assert_one_line(err.getvalue())
        return
    values = vars(args)
    if values.get("n") is not None:
        assert 1 <= values["n"] <= MAX_NODES
    for key in ("base_port", "runtime_base_port"):
        if key in values:
            assert 0 <= values[key] <= 65535
    for key in ("timeout", "grace", "percent", "ms"):
        if key in values:
            assert math.isfinite(values[key])
            assert values[key] >= 0
    if "name" in values:
        assert NAME_RE.fullmatch(values["name"])
    for key in ("node", "peer"):
        if values.get(key) is not None and values[key] != "all":
            assert 0 <= int(values[key]) < 2**31


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ARGV)
def test_commands_on_hostile_arguments_answer_in_one_line(
    cluster_home: Path, argv: list[str]
) -> None:
    # up and scenario would start processes when their arguments are good: parser only there
    assume(_no_help(argv) and argv[0] not in ("up", "scenario"))
    code, _, err = run(*argv)
    assert code in (0, 2), err
    if code == 2:
        assert_one_line(err)
    else:
        assert err == ""
    assert not any(cluster_home.iterdir())


@pytest.mark.parametrize(
    ("env_home", "argv", "message"),
    [
        ("~nouser/c", ["status"], "no cluster named 'default' (no clusters under ~nouser/c)"),
        (None, ["scenario", "kill_one", "--hostfile", "~nouser/h"], "hostfile ~nouser/h: no such"),
    ],
)
def test_a_home_of_no_user_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    env_home: str | None,
    argv: list[str],
    message: str,
) -> None:
    """pathlib's expanduser raises for ``~nouser``; the commands say it in one line instead."""
    monkeypatch.setenv("RT_CLUSTER_HOME", env_home or str(tmp_path))
    code, out, err = run(*argv)
    assert (code, out) == (2, "")
    assert message in err
    assert "Traceback" not in err
