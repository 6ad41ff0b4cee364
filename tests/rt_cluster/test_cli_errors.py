"""rt_cluster without processes: arguments, messages, the cluster record, ports."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cluster.local import (
    BadInput,
    ClusterRecord,
    NodeRecord,
    check_port_free,
    cluster_dir,
    load_record,
    pick_free_ports,
    plan_cluster,
    process_state,
    save_record,
)
from scenarios.command import main
from tests.support import hold_port


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["status", "--name", "ghost"], "no cluster named 'ghost'"),
        (["down", "--name", "ghost"], "no cluster named 'ghost'"),
        (["kill", "1", "--name", "ghost"], "no cluster named 'ghost'"),
        (["kill", "x"], "not a node id: 'x'"),
        (["loss", "0", "150"], "PERCENT: 150 is out of range"),
        (["loss", "0", "lots"], "PERCENT: expected a number from 0 to 100, got 'lots'"),
        (["delay", "0", "-5"], "MS: -5 is out of range"),
        (["partition", "0,a", "1"], "bad group '0,a'"),
        (["cut", "0", "x"], "bad group 'x'"),
        (["cut", "0", "4-2"], "bad group '4-2'"),
        (["cut", "0"], "the following arguments are required: TO"),
        (["clock", "0", "--offset", "31622401"], "--offset: '31622401' s is past a year"),
        (["clock", "0", "--offset=-31622400.5"], "at most 31622400 s (366 days) either way"),
        (["clock", "0", "--offset=-1e9"], "past a year"),
        (["clock", "0", "--offset", "soon"], "--offset: expected a number"),
        (["clock", "0", "--rate", "0.4"], "--rate: 0.4 is out of range"),
        (["clock", "0", "--rate", "2.5"], "--rate: 2.5 is out of range"),
        (["clock", "0", "--rate", "fast"], "--rate: expected a number"),
        (["clock", "0", "--rate", "nan"], "--rate: expected a number"),
        (["clock", "x"], "not a node id: 'x'"),
        (["disk", "0", "m1", "--latency-ms", "-1"], "--latency-ms: -1 is out of range"),
        (["disk", "0", "m1", "--errors", "101"], "--errors: 101 is out of range"),
        (["disk", "0", "m1", "--errors", "lots"], "--errors: expected a number"),
        (["disk", "0", ""], "not a pool name: ''"),
        (["disk", "0"], "the following arguments are required: POOL"),
        (["up", "-n", "2", "--name", "bad/name"], "bad cluster name"),
        (["up", "-n", "0"], "argument -n/--nodes: 0 is out of range (from 1 to 1024)"),
        (["scenario", "kill_one", "-n", "2000"], "-n 2000: real clusters have at most 1024"),
        (["scenario", "kill_one", "-n", "70000", "--sim"], "out of range (from 1 to 65536)"),
        (["frobnicate"], "unknown command 'frobnicate' (commands: up, status,"),
    ],
)
def test_bad_input_is_a_message_not_a_traceback(
    cluster_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 2, err
    assert message in err
    assert "Traceback" not in err


def _record(home: Path, name: str = "c1") -> ClusterRecord:
    d = cluster_dir(name)
    d.mkdir(parents=True)
    nodes = tuple(
        NodeRecord(
            node_id=i,
            pid=0,
            runtime_port=20000 + i,
            dashboard_port=21000 + i,
            dashboard="",
            log=str(d / f"node-{i}.log"),
            events=str(d / f"node-{i}.events"),
            state="stopped",
        )
        for i in range(3)
    )
    rec = ClusterRecord(name=name, directory=str(d), hostfile=str(d / "hostfile"), nodes=nodes)
    save_record(rec)
    return rec


def test_record_round_trip_and_unknown_node(cluster_home: Path) -> None:
    rec = _record(cluster_home)
    assert load_record("c1") == rec
    with pytest.raises(BadInput, match="has no node 7"):
        rec.node(7)


def test_unknown_node_and_stopped_node(
    cluster_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(cluster_home)
    code, _, err = run(capsys, "kill", "7", "--name", "c1")
    assert code == 2
    assert "cluster 'c1' has no node 7 (nodes: 0, 1, 2)" in err
    code, _, err = run(capsys, "pause", "1", "--name", "c1")
    assert code == 2
    assert "node 1 is not running" in err
    code, _, err = run(capsys, "partition", "0", "1", "--name", "c1")
    assert code == 2
    assert "node(s) 2 are in no group" in err
    code, out, _ = run(capsys, "status", "--json", "--name", "c1")
    assert code == 0
    assert '"state": "stopped"' in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cut", "0", "0"], "node 0 cannot be cut off from itself"),
        (["cut", "0,1", "1-2"], "node 1 cannot be cut off from itself"),
        (["cut", "0", "7"], "cluster 'c1' has no node 7 (nodes: 0, 1, 2)"),
        (["cut", "9", "1"], "cluster 'c1' has no node 9"),
        (["clock", "7", "--offset", "10"], "cluster 'c1' has no node 7"),
        (["disk", "7", "m1"], "cluster 'c1' has no node 7"),
    ],
)
def test_bad_faults_on_a_cluster_are_one_line(
    cluster_home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    _record(cluster_home)
    code, _, err = run(capsys, *argv, "--name", "c1")
    assert code == 2, err
    assert message in err
    assert len(err.strip().splitlines()) == 1, err


def test_a_clock_on_a_stopped_node_is_kept_for_its_next_start(
    cluster_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _record(cluster_home)
    code, out, err = run(capsys, "clock", "1", "--offset", "-3600", "--rate", "1.5", "--name", "c1")
    assert code == 0, err
    assert "clock of node 1: offset -3600 s, rate 1.5" in out
    rec = load_record("c1")
    assert (rec.node(1).clock_offset, rec.node(1).clock_rate) == (-3600.0, 1.5)
    assert (rec.node(0).clock_offset, rec.node(0).clock_rate) == (0.0, 1.0)
    from cluster.local import LocalCluster

    argv = LocalCluster(rec).node_command(1)
    at = argv.index("--clock-offset")
    assert argv[at : at + 4] == ["--clock-offset", "-3600.000000", "--clock-rate", "1.500000"]
    assert "--clock-offset" not in LocalCluster(rec).node_command(0)
    code, _, err = run(capsys, "heal", "--name", "c1")
    assert code == 0, err
    assert load_record("c1").node(1).clock_offset == 0.0


def test_status_json_shape(cluster_home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    _record(cluster_home)
    _code, out, _ = run(capsys, "status", "--json", "--name", "c1")
    body = json.loads(out)
    assert list(body) == ["name", "nodes", "strays", "network"]
    assert body["network"] is None  # no namespaces (up --netns)
    assert list(body["nodes"][0]) == [
        "node_id",
        "pid",
        "state",
        "host",
        "runtime_port",
        "dashboard",
        "log",
        "events",
        "ended",
        "faults",
        "cut_from",
    ]
    assert body["nodes"][0]["host"] == "127.0.0.1"


def test_process_state_sees_reused_pids_and_zombies() -> None:
    assert process_state(os.getpid(), 0.0) == "running"
    assert process_state(os.getpid(), 1.0) == "gone"  # same pid, another start time
    assert process_state(0, 0.0) == "gone"


def test_taken_port_is_named_before_anything_starts(tmp_path: Path) -> None:
    (port,) = pick_free_ports("127.0.0.1", 1, udp=True)
    with hold_port(port=port):
        assert check_port_free("127.0.0.1", port, udp=True) is not None
        with pytest.raises(Exception, match=f"node 0: runtime port taken: TCP port {port}"):
            plan_cluster(tmp_path / "x", "x", 3, base_port=0, runtime_base_port=port)
    rec = plan_cluster(tmp_path / "y", "y", 3, base_port=0, runtime_base_port=0)
    ports = [n.runtime_port for n in rec.nodes] + [n.dashboard_port for n in rec.nodes]
    assert len(set(ports)) == 6
    assert Path(rec.hostfile).read_text().splitlines() == [
        f"127.0.0.1:{n.runtime_port}" for n in rec.nodes
    ]


def test_a_serf_agent_cannot_cut_and_has_no_clock(
    cluster_home: Path, fake_serf: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    d = cluster_dir("mix")
    save_record(plan_cluster(d, "mix", 3, serf=2, base_port=0, runtime_base_port=0))
    code, _, err = run(capsys, "cut", "3", "0", "--name", "mix")
    assert code == 2, err
    assert "serf-3 cannot cut: only rtsim nodes can drop what they send" in err
    code, _, err = run(capsys, "clock", "4", "--offset", "5", "--name", "mix")
    assert code == 2, err
    assert "member 4 of cluster 'mix' is Serf agent serf-4" in err
