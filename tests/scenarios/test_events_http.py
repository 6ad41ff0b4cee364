"""A real run reads every node's events over HTTP (``/api/events``), and reads what the nodes
wrote to their event-log files: the same changes, across a pause, a restart and a kill."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from scenarios import Trace, parse_scenario, run_scenario

pytestmark = pytest.mark.slow

SCENARIO = """
name: events over http
nodes: 4
workload: off
duration: 12
steps:
  - {at: 1.5, pause: 1, for: 1, name: nap}
  - {at: 3.5, restart: 3, name: again}
  - {at: 10, kill: 2, name: kill}
expect:
  - {converged: true, after: again, within: 6}
  - {never_dead: [0, 1]}
"""
Key = tuple[int, int, Any, str, str, float]


def _key(e: dict[str, Any]) -> Key:
    return (e["observer"], e["subject"], e["old"], e["new"], e["cause"], float(e["mono"]))


def _file_events(cluster: Path) -> list[dict[str, Any]]:
    out = []
    for path in sorted(cluster.glob("node-*.events")):
        out += [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return out


def _read_until(trace: Trace, observer: int, mono: float) -> float:
    """When the reads of the process of ``observer`` that ran at ``mono`` last caught up
    (``time.monotonic()``): the process is told by the restarts before ``mono``."""
    assert trace.collection is not None
    feed = next(n for n in trace.collection["nodes"] if n["node_id"] == observer)
    restarts = sum(
        1 for a in trace.actions if a.kind == "restart" and observer in a.nodes and a.t < mono
    )
    return trace.t0 + feed["boots"][restarts]["read_until"]


def _kill_leftovers(out: Path) -> None:
    rec = out / "cluster" / "cluster.json"
    if rec.is_file():
        for n in json.loads(rec.read_text()).get("nodes", []):
            try:
                os.killpg(int(n["pid"]), signal.SIGKILL)
            except (ProcessLookupError, PermissionError, ValueError, KeyError):
                pass


def test_a_real_run_reads_over_http_what_the_nodes_logged(tmp_path: Path) -> None:
    sc = parse_scenario(SCENARIO, "events.yaml")
    try:
        results, trace = run_scenario(sc, out=tmp_path)
    finally:
        _kill_leftovers(tmp_path)
    assert trace is not None, results["error"]
    assert results["verdict"] == "pass", (results["expectations"], str(tmp_path))
    collection = results["collection"]
    assert collection["via"] == "GET /api/events"
    assert collection["incomplete"] == [], collection
    assert collection["dropped"] == 0
    assert collection["restarted"] == [3]  # both processes of node 3 were read

    http = {_key(e) for e in trace.events}
    assert len(http) == len(trace.events) == results["events"]  # no event read twice
    files = _file_events(tmp_path / "cluster")
    assert http <= {_key(e) for e in files}  # nothing the nodes did not log

    # Every logged change of the run is read, except what a process logged after its last
    # read caught up and before it ended (the kill, the stop of the restart). The others are
    # read once more after the end, so none of theirs is missing.
    logged = [e for e in files if float(e["mono"]) <= trace.end]
    missing = [e for e in logged if _key(e) not in http]
    for e in missing:
        assert e["observer"] in (2, 3), e
        assert float(e["mono"]) >= _read_until(trace, e["observer"], float(e["mono"])), e
    assert len(missing) <= 6, missing

    def changes(events: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
        return {k[:5] for k in map(_key, events)}

    read = [e for e in trace.events if float(e["mono"]) <= trace.end]
    assert changes(read) == changes([e for e in logged if e not in missing])
    assert {e["observer"] for e in read} == {0, 1, 2, 3}
    # node 1's own view across its pause, and node 3's from both of its processes
    assert any(e["observer"] == 3 and e["mono"] > trace.action("again").t for e in read)
    assert any(e["observer"] == 3 and e["mono"] < trace.action("again").t for e in read)
