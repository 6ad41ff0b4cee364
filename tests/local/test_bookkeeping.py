"""rt_cluster's process bookkeeping on real clusters (issue 12): no node is lost to a restart
under ``--foreground``, a closed stdout, a ``kill -9`` of ``up`` or a client that gave up on a
paused node; every node says why it ended; a taken port names its holder.

Proof that nothing is left is independent of the records under test: no process may hold a
file of the cluster's directory (``helpers.wait_nothing_holds``).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from cluster.local import load_record, process_state
from tests.support import wait_for
from tests.support.clusters import (
    interrupt,
    open_rt_cluster,
    quiet_config,
    read_until,
    rt_cluster,
    up_argv,
    wait_nothing_holds,
)

pytestmark = pytest.mark.slow


def _status(name: str) -> dict[str, Any]:
    res = rt_cluster("status", "--json", "--name", name)
    assert res.returncode == 0, res.stderr
    body: dict[str, Any] = json.loads(res.stdout)
    return body


def _foreground(name: str, n: int, tmp_path: Path) -> AbstractContextManager[subprocess.Popen[str]]:
    """``up --foreground`` of ``n`` nodes at rest, its errors in ``<tmp_path>/<name>.err``."""
    argv = up_argv(name, n, quiet_config(tmp_path), "--foreground")
    return open_rt_cluster(argv, tmp_path / f"{name}.err")


def _wait_forks_begin(up: subprocess.Popen[str], log: Path) -> None:
    """Until ``log`` (node 1's, opened just before it is forked) exists, or ``up`` has ended;
    looked at every 2 ms, so what the test does next lands while the forks go on."""

    def begun() -> bool:
        return log.exists() or up.poll() is not None

    wait_for("node 1's log (the forks begin)", begun, timeout=120, interval=0.002)


def _ignores_sigpipe(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    mask = int(next(x for x in status.splitlines() if x.startswith("SigIgn:")).split()[1], 16)
    return bool(mask & (1 << (signal.SIGPIPE - 1)))


def _server_side_open(server_port: int, client_port: int) -> bool:
    """Whether the kernel still has the server's end of that connection (any owner)."""
    for proto in ("tcp", "tcp6"):
        for line in Path(f"/proc/net/{proto}").read_text().splitlines()[1:]:
            local, remote = line.split()[1:3]
            if (
                int(local.rsplit(":", 1)[1], 16) == server_port
                and int(remote.rsplit(":", 1)[1], 16) == client_port
            ):
                return True
    return False


def test_paused_node_survives_a_client_that_gave_up_and_status_says_why_nodes_end(
    cluster_home: Path, tmp_path: Path
) -> None:
    # Every node forked the way rt_cluster forks them ignores SIGPIPE (as Python does at
    # start): a write to a socket whose peer left is an error, not death.
    assert rt_cluster(*up_argv("p", 3, quiet_config(tmp_path))).returncode == 0
    nodes = _status("p")["nodes"]
    assert all(_ignores_sigpipe(n["pid"]) for n in nodes)
    for node in nodes:
        pid, url = node["pid"], node["dashboard"]
        port = int(url.rsplit(":", 1)[1])
        assert rt_cluster("pause", str(node["node_id"]), "--name", "p").returncode == 0
        with socket.create_connection(("127.0.0.1", port)) as client:
            client.sendall(b"GET /api/health HTTP/1.1\r\nHost: x\r\n\r\n" * 20)
            client_port = client.getsockname()[1]
        assert rt_cluster("resume", str(node["node_id"]), "--name", "p").returncode == 0
        # the node answers the requests of the client that left, then closes its end
        wait_for(
            "the node to be done with the connection of the client that left",
            lambda p=port, c=client_port: _server_side_open(p, c),
            until=lambda still_open: not still_open,
            timeout=30,
        )
        assert process_state(pid, 0) == "running", Path(node["log"]).read_text()[-2000:]
    # The port of a running node, asked for again, names the node that holds it.
    taken = rt_cluster("up", "-n", "1", "--name", "other", "--base-port", "0",
                       "--runtime-base-port", str(nodes[0]["runtime_port"]))  # fmt: skip
    assert taken.returncode == 1
    assert f"is taken by pid {nodes[0]['pid']} (python -m cluster.node.cli start" in taken.stderr
    assert "node 0 of cluster p); stop it with: rt_cluster down --name p" in taken.stderr
    # A node killed from outside: status says how it ended and quotes its log's last line.
    victim = nodes[2]
    os.kill(victim["pid"], signal.SIGKILL)
    wait_for("status to see node 2 gone", lambda: _status("p")["nodes"][2],
             until=lambda n: n["ended"] is not None, timeout=30)  # fmt: skip
    seen = _status("p")["nodes"][2]
    assert seen["state"] == "exited"
    assert seen["ended"]["signal"] == "SIGKILL"
    assert seen["ended"]["code"] is None
    assert f"node 2 up: runtime 127.0.0.1:{seen['runtime_port']}" in seen["ended"]["last_line"]
    table = rt_cluster("status", "--name", "p")
    assert "killed by SIGKILL" in table.stdout
    assert "node 2 (killed by SIGKILL), last log line:" in table.stdout
    # A clean stop records exit code 0; down ends the rest.
    assert rt_cluster("stop", "1", "--name", "p").returncode == 0
    assert rt_cluster("down", "--name", "p").returncode == 0
    wait_nothing_holds(cluster_home / "p")
    ended = {n["node_id"]: n["ended"] for n in _status("p")["nodes"]}
    assert ended[1]["code"] == 0
    assert ended[0]["code"] == 0
    assert load_record("p").node(2).ended is not None


def test_ctrl_c_of_foreground_stops_restarted_and_added_nodes(
    cluster_home: Path, tmp_path: Path
) -> None:
    with _foreground("f", 2, tmp_path) as fg:
        assert fg.stdout is not None
        read_until(fg.stdout, "changes, one line each")
        first = {n["node_id"]: n["pid"] for n in _status("f")["nodes"]}
        res = rt_cluster("restart", "1", "--name", "f")
        assert res.returncode == 0, res.stderr
        res = rt_cluster("add", "--name", "f")
        assert res.returncode == 0, res.stderr
        now = {n["node_id"]: n["pid"] for n in _status("f")["nodes"]}
        assert now[1] != first[1]
        assert set(now) == {0, 1, 2}
        out = interrupt(fg)
    assert fg.returncode == 0, (tmp_path / "f.err").read_text()
    assert "cluster 'f' is down: 3 processes ended, none left running" in out
    wait_nothing_holds(cluster_home / "f")
    body = _status("f")
    assert {n["state"] for n in body["nodes"]} == {"stopped"}
    assert body["strays"] == []


def test_closed_stdout_then_ctrl_c_leaves_nothing(cluster_home: Path, tmp_path: Path) -> None:
    # rt_cluster up --foreground | head -1, then Ctrl-C
    with _foreground("h", 2, tmp_path) as fg:
        assert fg.stdout is not None
        read_until(fg.stdout, "changes, one line each")
        fg.stdout.close()  # the reader is gone; the next line, on a change, meets a broken pipe
        assert rt_cluster("pause", "1", "--name", "h").returncode == 0
        wait_for(
            "up --foreground to meet the closed pipe",
            lambda: fg.poll() is not None or os.readlink(f"/proc/{fg.pid}/fd/1") == os.devnull,
            timeout=30,
        )
        if fg.poll() is None:
            fg.send_signal(signal.SIGINT)
        fg.wait(timeout=60)
    wait_nothing_holds(cluster_home / "h")
    assert fg.returncode == 0


def test_kill_9_of_up_mid_way_leaves_nothing_down_cannot_find(
    cluster_home: Path, tmp_path: Path
) -> None:
    with open_rt_cluster(up_argv("k", 4, quiet_config(tmp_path)), tmp_path / "k.err") as up:
        _wait_forks_begin(up, cluster_home / "k" / "node-1.log")
        up.kill()  # kill -9 as the forks begin
    res = rt_cluster("down", "--name", "k")
    assert res.returncode == 0, res.stderr
    wait_nothing_holds(cluster_home / "k")
    # the same name starts afresh (new ports, new hostfile, new record) and stops again
    res = rt_cluster(*up_argv("k", 2, tmp_path / "node.yaml"))
    assert res.returncode == 0, res.stderr
    assert {n["state"] for n in _status("k")["nodes"]} == {"running"}
    assert rt_cluster("down", "--name", "k").returncode == 0
    wait_nothing_holds(cluster_home / "k")


def test_ctrl_c_of_up_mid_way_ends_what_it_started(cluster_home: Path, tmp_path: Path) -> None:
    with open_rt_cluster(up_argv("i", 4, quiet_config(tmp_path)), tmp_path / "i.err") as up:
        _wait_forks_begin(up, cluster_home / "i" / "node-1.log")
        interrupt(up)  # Ctrl-C as the forks begin
    err = (tmp_path / "i.err").read_text()
    assert up.returncode == 130, err
    assert "interrupted; no node of cluster 'i' is left running" in err
    assert "Traceback" not in err
    wait_nothing_holds(cluster_home / "i")
