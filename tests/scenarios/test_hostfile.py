"""``rt_cluster scenario FILE --hostfile H``: a scenario played on a cluster that is already
running (one ``rt_cluster up`` started, and nodes started by hand), nothing launched or torn
down; steps it cannot carry out are refused before any node is contacted."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from cluster.local import (
    pick_free_ports,
)
from cluster.rpc import Monitor, rpc_call
from scenarios.command import main
from tests.support import HOST, Harness, held_socket
from tests.support.clusters import quiet_config, rt_cluster, up_argv


def _write(path: Path, text: str) -> str:
    path.write_text(text)
    return str(path)


def _pids(name: str) -> dict[int, tuple[int, str]]:
    status = rt_cluster("status", "--json", "--name", name)
    assert status.returncode == 0, status.stderr
    return {n["node_id"]: (n["pid"], n["state"]) for n in json.loads(status.stdout)["nodes"]}


# ---- on a running cluster -------------------------------------------------------------------

ON_RT_CLUSTER = """
name: loss and a restart
nodes: 3
steps:
  - {at: 1, loss: {node: all, percent: 10}, name: loss}
  - {at: 3, heal: true, name: heal}
  - {at: 4, restart: 2, name: again}
expect:
  - {never_dead: [0, 1]}
  - {converged: true, after: again}
"""


@pytest.mark.slow
def test_a_scenario_plays_on_a_cluster_rt_cluster_started(
    cluster_home: Path, tmp_path: Path
) -> None:
    up = rt_cluster(*up_argv("hf", 3, quiet_config(tmp_path)))
    assert up.returncode == 0, up.stdout + up.stderr
    before = _pids("hf")
    out = tmp_path / "out"
    hostfile = str(cluster_home / "hf" / "hostfile")
    scenario = _write(tmp_path / "s.yaml", ON_RT_CLUSTER)
    run = rt_cluster("scenario", scenario, "--hostfile", hostfile, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "an rt_cluster cluster of 3 nodes" in run.stdout
    results = json.loads((out / "results.json").read_text())
    assert (results["verdict"], results["hostfile"], results["nodes"]) == ("pass", hostfile, 3)
    kinds = [s["kind"] for s in results["steps"]]
    assert kinds == ["loss", "heal", "stop", "restart"]
    assert results["collection"]["restarted"] == [2]
    assert results["collection"]["incomplete"] == []
    after = _pids("hf")  # nothing torn down; node 2 runs again, recorded in the cluster's record
    assert [after[i] for i in (0, 1)] == [before[0], before[1]]
    assert after[2][1] == "running"
    assert after[2][0] != before[2][0]
    down = rt_cluster("down", "--name", "hf")
    assert down.returncode == 0, down.stderr


BY_HAND = """
name: faults and signals on nodes started by hand
nodes: 3
duration: 8
steps:
  - {at: 1, partition: [[0], rest], name: split}
  - {at: 2.5, heal: true, name: heal}
  - {at: 3.5, pause: 1, for: 1, name: nap}
  - {at: 6, kill: 2, name: kill}
  - {at: 6.5, loss: {node: 0, percent: 5}, name: lossy}
expect:
  - {never_dead: [0, 1]}
"""


def _faults(port: int) -> dict[str, object]:
    body = trio.run(rpc_call, HOST, port, Monitor("faults"), 2.0)
    assert isinstance(body, dict)
    return body


@pytest.mark.slow
def test_a_scenario_plays_on_nodes_started_by_hand(harness: Harness, tmp_path: Path) -> None:
    ports = pick_free_ports(HOST, 3, udp=True)
    hostfile = _write(tmp_path / "hostfile", "".join(f"{HOST}:{p}\n" for p in ports))
    config = str(quiet_config(tmp_path))
    nodes = [
        harness.start_node("--hostfile", hostfile, "--config", config, port=p, name=f"n{i}")
        for i, p in enumerate(ports)
    ]
    for node in nodes:
        harness.wait_ready(node)
    out = tmp_path / "out"
    scenario = _write(tmp_path / "s.yaml", BY_HAND)
    run = rt_cluster("scenario", scenario, "--hostfile", hostfile, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    assert "a running cluster of 3 nodes" in run.stdout
    assert "note: healed the faults the run left in force" in run.stdout  # the loss on node 0
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] == "pass", results["expectations"]
    kinds = [s["kind"] for s in results["steps"]]
    assert kinds == ["partition", "heal", "pause", "resume", "kill", "loss"]
    assert results["collection"]["incomplete"] == [], results["collection"]
    assert not harness.alive(nodes[2])  # killed by the run, by its pid
    assert harness.alive(nodes[0])  # the rest is left running
    assert harness.alive(nodes[1])
    assert harness.state(nodes[1]) == "running"
    assert not _faults(ports[0])["active"]


# ---- refused before anything is sent --------------------------------------------------------


@pytest.fixture
def listeners() -> Iterator[list[socket.socket]]:
    """Two listening sockets that never accept: a connection to one shows in its backlog."""
    with held_socket() as one, held_socket() as two:
        for s in (one, two):
            s.setblocking(False)
        yield [one, two]


def _nobody_came(socks: list[socket.socket]) -> bool:
    for s in socks:
        try:
            conn, _ = s.accept()
        except BlockingIOError:
            continue
        conn.close()
        return False
    return True


@pytest.mark.parametrize(
    ("step", "said"),
    [
        ("{at: 1, kill: 2, name: boom}", "step 1 (boom) kills node 2 on another host"),
        ("{at: 1, pause: 2, for: 1, name: nap}", "step 1 (nap) pauses node 2 on another host"),
        (
            "{at: 1, stop: leader, name: halt}",
            "step 1 (halt) stops the leader, which may be node 2 on another host",
        ),
    ],
)
def test_a_signal_to_a_node_on_another_host_is_refused_before_any_contact(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    listeners: list[socket.socket],
    step: str,
    said: str,
) -> None:
    entries = [f"{HOST}:{s.getsockname()[1]}" for s in listeners] + ["192.0.2.1:9413"]
    hostfile = _write(tmp_path / "hostfile", "\n".join(entries) + "\n")
    scenario = _write(tmp_path / "s.yaml", f"nodes: 3\nsteps:\n  - {step}\n")
    out = tmp_path / "out"
    assert main(["scenario", scenario, "--hostfile", hostfile, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert said in err
    assert "(192.0.2.1:9413)" in err
    assert err.count("\n") == 1
    assert not out.exists()
    assert _nobody_came(listeners)


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["--sim"], "--hostfile plays on a running cluster's processes, not with --sim"),
        (["-n", "2"], "-n does not go with --hostfile"),
    ],
)
def test_options_that_do_not_go_with_a_hostfile(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], said: str
) -> None:
    hostfile = _write(tmp_path / "hostfile", f"{HOST}:9\n")
    assert main(["scenario", "kill_one", "--hostfile", hostfile, *argv]) == 2
    assert said in capsys.readouterr().err


def test_what_a_hostfile_cluster_cannot_do_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], listeners: list[socket.socket]
) -> None:
    entries = "".join(f"{HOST}:{s.getsockname()[1]}\n" for s in listeners)
    hostfile = _write(tmp_path / "hostfile", entries)
    cases = [
        ("{at: 1, restart: 0, name: again}", "restarts node 0: starting a node process needs"),
        ("{at: 1, add: 1, name: more}", "step 1 (more) adds a node: starting a node process"),
        ("{at: 1, kill: 2, name: boom}", "node 2 does not exist"),
    ]
    for step, said in cases:
        scenario = _write(tmp_path / "s.yaml", f"nodes: 2\nsteps:\n  - {step}\n")
        assert main(["scenario", scenario, "--hostfile", hostfile]) == 2
        assert said in capsys.readouterr().err
    assert main(["scenario", "kill_one", "--hostfile", str(tmp_path / "nope")]) == 2
    assert "no such file" in capsys.readouterr().err
    bad = _write(tmp_path / "bad", "127.0.0.1:notaport\n")
    assert main(["scenario", "kill_one", "--hostfile", bad]) == 2
    assert "expected host[:port]" in capsys.readouterr().err
    assert _nobody_came(listeners)


def test_a_hostfile_whose_nodes_do_not_answer_is_an_error_not_a_hang(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ports = pick_free_ports(HOST, 2, udp=False)  # nothing listens there
    hostfile = _write(tmp_path / "hostfile", "".join(f"{HOST}:{p}\n" for p in ports))
    scenario = _write(tmp_path / "s.yaml", "nodes: 2\nsteps:\n  - {at: 1, heal: true}\n")
    out = tmp_path / "out"
    assert main(["scenario", scenario, "--hostfile", hostfile, "--out", str(out)]) == 2
    results = json.loads((out / "results.json").read_text())
    assert results["verdict"] == "error"
    assert f"node 0 ({HOST}:{ports[0]})" in results["error"] or "node 1" in results["error"]
    assert "error:" in capsys.readouterr().out
