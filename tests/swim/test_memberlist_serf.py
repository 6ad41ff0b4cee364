"""rtsim nodes inside a real Serf cluster (Debian's serf 0.9.4, memberlist 0.2.2).

Two ``serf agent`` processes and one ``rt_run start --wire memberlist`` node, plain and with
``-encrypt`` keys: they see each other alive, each side sees a member the other killed with
SIGKILL as dead, a restarted node comes back alive, and a node with a wrong key is never
listed alive. The detection times themselves are a benchmark's (``python -m
bench.memberlist``), never a test's.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from cluster.local import free_port
from tests.support import HOST, Child, Harness, wait_for
from tests.support.serf import Agent, start_node

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs Debian's serf"),
]

TEST_KEY = base64.b64encode(b"rtsim-serf-test-key-32-bytes!!!!").decode()
WRONG_KEY = base64.b64encode(b"an-other-test-key-of-32-bytes!!!").decode()
DEAD_BOUND = 45.0  # s: LAN profile, 3 members: probe, 3 helpers, suspicion of 4-24 s


def topology(node: Child) -> dict[str, dict[str, Any]]:
    with urllib.request.urlopen(f"{node.url}/api/topology", timeout=5) as reply:
        answer = json.load(reply)
    return {row["name"]: row for row in answer["nodes"]}


def states(node: Child) -> dict[str, str]:
    return {name: row["state"] for name, row in topology(node).items()}


def key_file(tmp_path: Path, key: str | None) -> Path | None:
    if key is None:
        return None
    path = tmp_path / "gossip.key"
    path.write_text(key + "\n")
    return path


@pytest.mark.timeout(240)
@pytest.mark.parametrize("key", [None, TEST_KEY], ids=["plain", "encrypted"])
def test_an_rtsim_node_in_a_serf_cluster(harness: Harness, tmp_path: Path, key: str | None) -> None:
    a = Agent(harness, "serf-a", None, key)
    b = Agent(harness, "serf-b", a.port, key)
    port = free_port()
    node = start_node(harness, a.port, key_file(tmp_path, key), port=port, name="rt-0")

    everyone = {"serf-a": "alive", "serf-b": "alive", "rt-0": "alive"}
    for agent in (a, b):
        wait_for(
            f"{agent.name} lists rt-0 alive", lambda ag=agent: ag.members() == everyone, timeout=10
        )
    wait_for("rt-0 lists both agents alive", lambda: states(node) == everyone, timeout=10)
    rows = topology(node)
    assert (rows["serf-a"]["ip"], rows["serf-a"]["port"], rows["rt-0"]["port"]) == (
        HOST,
        a.port,
        port,
    )
    assert (rows["serf-a"]["rtsim"], rows["rt-0"]["rtsim"]) == (False, True)
    for agent in (a, b):
        assert agent.errors() == [], f"{agent.name} logged errors:\n" + "\n".join(agent.errors())

    harness.kill(node)  # SIGKILL: no leave
    for agent in (a, b):
        wait_for(
            f"{agent.name} lists rt-0 failed",
            lambda ag=agent: ag.members().get("rt-0") == "failed",
            timeout=15,
        )
    node = start_node(harness, a.port, key_file(tmp_path, key), port=port, name="rt-0")
    for agent in (a, b):
        wait_for(
            f"{agent.name} lists the restarted rt-0 alive",
            lambda ag=agent: ag.members().get("rt-0") == "alive",
            timeout=30,
        )
    assert topology(node)["rt-0"]["incarnation"] > 1  # it outbid the failed record

    harness.signal(b.child, signal.SIGKILL)
    wait_for(
        "rt-0 declares serf-b dead",
        lambda: states(node).get("serf-b") == "dead",
        timeout=DEAD_BOUND,
    )
    wait_for(
        "serf-a lists serf-b failed",
        lambda: a.members().get("serf-b") == "failed",
        timeout=DEAD_BOUND,
    )
    assert states(node)["serf-a"] == "alive"


@pytest.mark.timeout(120)
def test_a_node_with_a_wrong_key_is_never_listed_alive(harness: Harness, tmp_path: Path) -> None:
    a = Agent(harness, "serf-a", None, TEST_KEY)
    good = start_node(harness, a.port, key_file(tmp_path, TEST_KEY), port=free_port(), name="rt-0")
    wrong_file = tmp_path / "wrong.key"
    wrong_file.write_text(WRONG_KEY + "\n")
    wrong = start_node(harness, a.port, wrong_file, port=free_port(), name="rt-9")
    wait_for("serf-a lists rt-0 alive", lambda: a.members().get("rt-0") == "alive", timeout=30)
    # The wrong key's join was refused; give its gossip (probes, re-joins) time to be refused too.
    wait_for(
        "serf-a refuses rt-9's packets",
        lambda: any(re.search("(?i)decrypt|encrypt", e) for e in a.errors()),
        timeout=30,
    )
    seen = [a.members().get("rt-9") for _ in range(3)]
    assert "alive" not in seen, seen
    assert set(states(wrong)) == {"rt-9"}, states(wrong)  # it never learned anyone either
    assert "rt-9" not in states(good)
