"""``rt_cluster up -n 1 --serf 2`` end to end: an rtsim node speaking memberlist and two real
Serf agents form one cluster; ``status --json`` names the agents and their RPC addresses;
``serf members`` of an agent lists all three alive; ``kill`` of an agent ends its pid and the
others see it fail; ``down`` leaves nothing of the agents. Skipped without ``serf`` on PATH."""

from __future__ import annotations

import json
import re
import shutil
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cluster.local import serf_members
from tests.support import running, wait_for
from tests.support.clusters import quiet_config, rt_cluster, up_argv, wait_nothing_holds

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs serf on PATH"),
]


def _status(name: str) -> dict[str, Any]:
    res = rt_cluster("status", "--json", "--name", name)
    assert res.returncode == 0, res.stderr
    body: dict[str, Any] = json.loads(res.stdout)
    return body


def test_up_status_kill_and_down_of_a_cluster_with_serf_agents(
    cluster_home: Path, tmp_path: Path
) -> None:
    up = rt_cluster(*up_argv("mx", 1, quiet_config(tmp_path), "--serf", "2"), timeout=180)
    assert up.returncode == 0, up.stdout + up.stderr
    assert "every member lists 3 alive" in up.stdout

    body = _status("mx")
    agents = body["agents"]
    assert [(a["index"], a["kind"], a["name"]) for a in agents] == [
        (1, "serf", "serf-1"),
        (2, "serf", "serf-2"),
    ]
    assert all(a["rpc_addr"].startswith("127.0.0.1:") for a in agents)
    assert all(a["state"] == "running" and running(a["pid"]) for a in agents)
    assert body["nodes"][0]["name"] == "rt-0"
    assert body["nodes"][0]["sees_alive"] == ["rt-0", "serf-1", "serf-2"]
    everyone = {"rt-0": "alive", "serf-1": "alive", "serf-2": "alive"}
    assert serf_members(agents[0]["rpc_addr"]) == everyone

    killed = rt_cluster("kill", "2", "--name", "mx")
    assert killed.returncode == 0, killed.stderr
    assert "agent serf-2 killed (SIGKILL)" in killed.stdout
    assert not running(agents[1]["pid"])
    wait_for(
        "serf-1 to see serf-2 fail",
        lambda: serf_members(agents[0]["rpc_addr"]).get("serf-2") == "failed",
        timeout=60,
    )
    gone = _status("mx")["agents"][1]
    assert gone["state"] == "killed"
    # issue 44: rt_cluster killed it, so the cause is known (was "ended (cause unknown)")
    assert gone["ended"]["signal"] == "SIGKILL"
    table = rt_cluster("status", "--name", "mx").stdout
    assert re.search(r"^2\s+serf\s+serf-2\s+\d+\s+killed\s+killed by SIGKILL\s", table, re.M), table
    listed = rt_cluster("list").stdout  # issue 44: the agents are counted next to the nodes
    assert re.search(r"^mx\s+1\+2 serf\s+2\s", listed, re.M), listed

    down = rt_cluster("down", "--name", "mx")
    assert down.returncode == 0, down.stderr
    assert "1 node and 1 Serf agent processes; none left running" in down.stdout
    assert not any(running(a["pid"]) for a in agents)
    wait_nothing_holds(cluster_home / "mx")


def _topology_states(dashboard: str) -> dict[str, str]:
    with urllib.request.urlopen(f"{dashboard}/api/topology", timeout=5) as reply:
        return {row["name"]: row["state"] for row in json.load(reply)["nodes"]}


@pytest.mark.timeout(300)
def test_three_nodes_and_two_agents_converge_and_every_node_sees_a_killed_agent_dead(
    cluster_home: Path, tmp_path: Path
) -> None:
    """The issue's done-when: ``up -n 3 --serf 2`` converges, every member sees five alive,
    and a killed agent is seen dead by every rtsim node."""
    config = quiet_config(tmp_path)
    up = rt_cluster(*up_argv("mx5", 3, config, "--serf", "2"), timeout=240)
    assert up.returncode == 0, up.stdout + up.stderr
    five = ["rt-0", "rt-1", "rt-2", "serf-3", "serf-4"]
    body = _status("mx5")
    for member in (*body["nodes"], *body["agents"]):
        assert member["sees_alive"] == five, member
    dashboards = [n["dashboard"] for n in body["nodes"]]
    assert all(dashboards), body["nodes"]
    for agent in body["agents"]:
        assert serf_members(agent["rpc_addr"]) == dict.fromkeys(five, "alive")

    assert rt_cluster("kill", "4", "--name", "mx5").returncode == 0
    for dashboard in dashboards:
        wait_for(
            f"{dashboard} to hold serf-4 dead",
            lambda d=dashboard: _topology_states(d).get("serf-4") == "dead",
            timeout=60,
        )
    assert serf_members(body["agents"][0]["rpc_addr"]).get("serf-4") == "failed"
    assert rt_cluster("down", "--name", "mx5").returncode == 0
    wait_nothing_holds(cluster_home / "mx5")
