"""rt_cluster on real node processes: up, status, chaos, down; no orphans, ever."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import psutil
import pytest
import trio

from cluster.local import LocalCluster, load_record, pick_free_ports
from tests.support import hold_port, wait_for
from tests.support.clusters import quiet_config, rt_cluster, up_argv

pytestmark = pytest.mark.slow


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def up(name: str, n: int, tmp_path: Path) -> dict[str, Any]:
    res = rt_cluster(*up_argv(name, n, quiet_config(tmp_path)))
    assert res.returncode == 0, res.stdout + res.stderr
    status = rt_cluster("status", "--json", "--name", name)
    assert status.returncode == 0, status.stderr
    body: dict[str, Any] = json.loads(status.stdout)
    return body


def view(name: str, node: int) -> dict[int, str]:
    """What ``node`` believes of every member, over its RPC."""

    async def ask() -> dict[str, Any] | None:
        c = LocalCluster(load_record(name))
        return await c.topology(node, timeout=2.0)

    body = trio.run(ask)
    return {} if body is None else {m["node_id"]: m["state"] for m in body["nodes"]}


def wait_seen(what: str, node: int, member: int, states: set[str], timeout: float) -> None:
    """Wait until ``node`` of cluster t4 believes ``member`` is in one of ``states``."""
    wait_for(
        what,
        lambda: view("t4", node).get(member),
        until=lambda state: state in states,
        timeout=timeout,
        interval=0.2,
    )


def test_up_status_down_leaves_no_orphans(cluster_home: Path, tmp_path: Path) -> None:
    body = up("t1", 3, tmp_path)
    assert body["name"] == "t1"
    assert [n["node_id"] for n in body["nodes"]] == [0, 1, 2]
    assert all(
        n["state"] == "running" and n["dashboard"].startswith("http://127.0.0.1:")
        for n in body["nodes"]
    )
    pids = [n["pid"] for n in body["nodes"]]
    assert all(not gone(p) for p in pids)
    # the nodes outlived the `up` command and are in their own sessions
    assert all(os.getsid(p) == p for p in pids)
    again = rt_cluster(
        "up", "-n", "3", "--name", "t1", "--base-port", "0", "--runtime-base-port", "0"
    )
    assert again.returncode != 0
    assert "already running" in again.stderr
    down = rt_cluster("down", "--name", "t1")
    assert down.returncode == 0, down.stderr
    assert all(gone(p) for p in pids)
    after = json.loads(rt_cluster("status", "--json", "--name", "t1").stdout)
    assert {n["state"] for n in after["nodes"]} == {"stopped"}


def test_failed_up_cleans_up(cluster_home: Path, tmp_path: Path) -> None:
    # a taken dashboard port: refused before anything starts, naming the node and the holder
    # (node 0's own port, checked first: no other port's chance state can be named instead)
    (port,) = pick_free_ports("127.0.0.1", 1, udp=False)
    with hold_port(port=port):
        res = rt_cluster(
            "up",
            "-n",
            "2",
            "--name",
            "t2",
            "--base-port",
            str(port),
            "--runtime-base-port",
            "0",
        )
    assert res.returncode != 0
    assert "node 0: dashboard port taken" in res.stderr
    assert f"taken by pid {os.getpid()}" in res.stderr
    assert "Traceback" not in res.stderr
    # a node that cannot start (a bad configuration): named with its log; nothing left running
    bad = tmp_path / "bad.yaml"
    bad.write_text("networking: {bogus: 1}\n")
    res = rt_cluster(
        "up",
        "-n",
        "3",
        "--name",
        "t3",
        "--base-port",
        "0",
        "--runtime-base-port",
        "0",
        "--config",
        str(bad),
    )
    assert res.returncode != 0
    assert "node 0" in res.stderr, res.stderr
    assert "node-0.log" in res.stderr
    assert "no node of cluster 't3' is left running" in res.stderr
    rec = load_record("t3")
    assert all(gone(n.pid) for n in rec.nodes if n.pid)


def test_chaos_changes_membership(cluster_home: Path, tmp_path: Path) -> None:
    body = up("t4", 4, tmp_path)
    pids = [n["pid"] for n in body["nodes"]]
    try:
        assert rt_cluster("kill", "3", "--name", "t4").returncode == 0
        assert gone(pids[3])
        wait_seen("node 0 to see 3 dead", 0, 3, {"dead"}, 20)
        assert rt_cluster("pause", "2", "--name", "t4").returncode == 0
        assert psutil.Process(pids[2]).status() == psutil.STATUS_STOPPED
        wait_seen("2 suspected", 0, 2, {"suspected", "dead"}, 20)
        assert rt_cluster("resume", "2", "--name", "t4").returncode == 0
        wait_seen("2 alive again", 0, 2, {"alive"}, 25)
        res = rt_cluster("partition", "0", "1,2,3", "--name", "t4")
        assert res.returncode == 0, res.stderr
        wait_seen("0 to see 1 dead", 0, 1, {"dead"}, 25)
        assert rt_cluster("heal", "--name", "t4").returncode == 0
        wait_for(
            "the partition to heal",
            lambda: (view("t4", 0).get(1), view("t4", 1).get(0)),
            until=lambda states: states == ("alive", "alive"),
            timeout=40,
            interval=0.2,
        )
        res = rt_cluster("restart", "3", "--name", "t4")
        assert res.returncode == 0, res.stderr
        assert "converged" in res.stdout
        res = rt_cluster("add", "--name", "t4")
        assert res.returncode == 0, res.stderr
        assert "node 4 added" in res.stdout
        res = rt_cluster("loss", "all", "5", "--name", "t4")
        assert res.returncode == 0
        assert "on node(s) 0, 1, 2, 3, 4" in res.stdout
        res = rt_cluster("stop", "4", "--name", "t4")
        assert res.returncode == 0, res.stderr
        wait_seen("a stopped node shown as dead", 0, 4, {"dead"}, 10)
    finally:
        res = rt_cluster("down", "--name", "t4")
    assert res.returncode == 0, res.stderr
    assert all(gone(n.pid) for n in load_record("t4").nodes)
