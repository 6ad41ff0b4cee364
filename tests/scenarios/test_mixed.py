"""The library's mixed cluster on real processes, once: ``rt_cluster scenario
mixed_kill_one.yaml`` starts three rtsim nodes and two Serf agents, kills node 2, and every
other member, the agents too (``serf members``), sees it dead, then alive after its restart;
``results.json`` lists the agents' views; nothing is left running. Skipped without Debian's
serf (``.ci/run`` installs it)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cluster.local import live_members, read_record
from scenarios.runner import LIBRARY
from tests.support.clusters import end_everything

FILE = LIBRARY / "mixed_kill_one.yaml"
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("serf") is None, reason="needs Debian's serf"),
]


@pytest.mark.timeout(240)
def test_the_mixed_library_file_passes_on_nodes_and_serf_agents(tmp_path: Path) -> None:
    out = tmp_path / "out"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "scenarios.command", "scenario", str(FILE), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=200,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        assert "3 nodes and 2 Serf agents" in done.stdout
        results = json.loads((out / "results.json").read_text())
        assert results["verdict"] == "pass", results["expectations"]
        assert (results["nodes"], results["members"]) == (3, 5)
        agents = {a["name"]: a for a in results["agents"]}
        assert sorted(agents) == ["serf-3", "serf-4"]
        for name, agent in agents.items():
            died = [c for c in agent["changes"] if c["subject"] == 2 and c["new"] == "dead"]
            back = [c for c in agent["changes"] if c["subject"] == 2 and c["new"] == "alive"]
            assert died, (name, agent["changes"])
            assert back, (name, agent["changes"])
            assert died[0]["t"] < back[-1]["t"], (name, agent["changes"])
            assert agent["view"] == dict.fromkeys(["0", "1", "2", "3", "4"], "alive"), name
        (death,) = results["detection"]
        assert {o["observer"] for o in death["per_observer"]} == {0, 1, 3, 4}
        assert death["completeness"] == 1.0
        looks = results["collection"]["agents"]
        assert [a["name"] for a in looks] == ["serf-3", "serf-4"]
        assert all(a["looks"] > 0 for a in looks)
        drawn = (out / "report.html").read_text().split("<svg", 1)[1].split("</svg>", 1)[0]
        assert "serf-3" in drawn  # the timeline names the agents' bands
        assert "serf-4" in drawn
        home = out / "cluster"
        assert live_members(home, read_record(home)) == []
    finally:
        end_everything(out)
