"""The command line's rough edges (issue 44), word for word: ``--nodes`` is ``-n``'s long form
and what a wrong size says names the option once; no option is taken from an abbreviation, and
an unknown one is answered with the option of that meaning; ``explore --help`` shows its
defaults; a port a foreign process holds names the options that choose others; a mistyped
scenario name gets "did you mean"."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from cluster.local import pick_free_ports
from cluster.node.cli import build_parser as rt_run_parser
from tests.support import hold_port
from tests.support.clusters import run_main as run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["up", "-n", "0"],
            "rt_cluster up: argument -n/--nodes: 0 is out of range (from 1 to 1024) "
            "(see: rt_cluster up --help)",
        ),
        (
            ["up", "--nodes", "0"],
            "rt_cluster up: argument -n/--nodes: 0 is out of range (from 1 to 1024) "
            "(see: rt_cluster up --help)",
        ),
        (
            ["up", "--count", "3"],
            "rt_cluster up: unknown option '--count'; did you mean '--nodes'? "
            "(see: rt_cluster up --help)",
        ),
        (
            ["up", "--size", "3"],
            "rt_cluster up: unknown option '--size'; did you mean '--nodes'? "
            "(see: rt_cluster up --help)",
        ),
        (
            ["explore", "--budget", "60"],
            "rt_cluster explore: unknown option '--budget'; did you mean '--budget-s'? "
            "(see: rt_cluster explore --help)",
        ),
        (
            ["explore", "--budget-s=60", "--se", "1"],
            "rt_cluster explore: unknown option '--se'; did you mean '--seed'? "
            "(see: rt_cluster explore --help)",
        ),
        (
            ["up", "-n", "1", "--found"],
            "rt_cluster up: unknown option '--found'; did you mean '--foreground'? "
            "(see: rt_cluster up --help)",
        ),
        (
            ["explore", "-n", "1"],
            "rt_cluster explore: argument -n/--nodes: 1: sizes of 2 to 64 nodes, low first "
            "(see: rt_cluster explore --help)",
        ),
        (
            ["loss", "0", "150"],
            "rt_cluster loss: argument PERCENT: 150 is out of range (from 0 to 100) "
            "(see: rt_cluster loss --help)",
        ),
    ],
)
def test_the_exact_refusal(cluster_home: Path, argv: list[str], line: str) -> None:
    code, out, err = run(*argv)
    assert (code, out, err) == (2, "", line + "\n")


def test_nodes_is_the_long_form_of_n_everywhere() -> None:
    from scenarios.command import build_parser

    parser = build_parser()
    for argv in (["up", "--nodes", "4"], ["scenario", "kill_one", "--nodes", "4"]):
        assert parser.parse_args(argv).n == 4
    assert parser.parse_args(["explore", "--nodes", "4-6"]).n == (4, 6)


def test_rt_run_takes_no_abbreviation(capsys: pytest.CaptureFixture[str]) -> None:
    parser = rt_run_parser()
    assert str(parser.parse_args(["start", "--config", "x.yaml"]).config) == "x.yaml"
    with pytest.raises(SystemExit) as exc:
        parser.parse_args(["start", "--conf", "x.yaml"])
    assert exc.value.code == 2
    assert "unrecognized arguments: --conf x.yaml" in capsys.readouterr().err


def test_explore_help_shows_its_defaults() -> None:
    code, out, _ = run("explore", "--help")
    assert code == 0
    text = " ".join(out.split())  # argparse wraps to the terminal's width
    for default in (
        "(default: 3-5)",
        "(default: 60, unless --runs is given)",
        "search seed (default: 0)",
        "worker processes (default: 1)",
        "(default: explore-out)",
    ):
        assert default in text, default


def test_a_port_a_foreign_process_holds_names_the_options(cluster_home: Path) -> None:
    (port,) = pick_free_ports("127.0.0.1", 1, udp=True)
    with hold_port(port=port):  # held by this test's process: no node, no cluster
        code, _, err = run("up", "-n", "1", "--base-port", "0", "--runtime-base-port", str(port))
    assert code == 1, err
    assert err.rstrip().endswith(
        f"end it (kill {__import__('os').getpid()}) or choose other ports "
        "(--base-port, --runtime-base-port; 0 picks free ports)"
    ), err


def test_a_mistyped_scenario_name_gets_did_you_mean(cluster_home: Path) -> None:
    code, _, err = run("scenario", "kill_on", "--sim")
    assert code == 2, err
    assert "kill_on: no such file, nor a scenario of that name; did you mean 'kill_one'?" in err
    assert "library:" not in err


def test_a_name_near_nothing_lists_the_library(cluster_home: Path) -> None:
    code, _, err = run("scenario", "zzzzzz", "--sim")
    assert code == 2, err
    assert "zzzzzz: no such file, nor a scenario of that name (library: " in err


def test_the_installed_command_refuses_an_abbreviation(tmp_path: Path) -> None:
    """As a user runs it: a process, from a folder outside the repository."""
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.command", "explore", "--budget", "60"],
        cwd=tmp_path,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "RT_CLUSTER_HOME": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "rt_cluster explore: unknown option '--budget'; did you mean '--budget-s'? "
        "(see: rt_cluster explore --help)\n"
    )
