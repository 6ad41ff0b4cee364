"""Scenarios on real processes beside a loaded cluster: CI's sample of the pass-rate benchmark
(``python -m bench.verdicts passrates``, issue 13). ``kill_one`` and ``pause_short`` run once
each while a 5-node neighbour cluster with its workload on runs beside them; both pass, the
neighbour keeps running throughout, and afterwards no process of either cluster is left."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from bench.verdicts.load import NEIGHBOUR_NODES, end_leftovers, open_neighbour
from cluster.local import process_state, read_record
from scenarios import find_scenario, load_scenario, run_scenario, write_outputs

pytestmark = pytest.mark.slow
NAMES = ("kill_one", "pause_short")


def _recorded(directory: Path) -> list[tuple[int, int]]:
    """(pid, start marker) of every node process the cluster's record names."""
    record = read_record(directory)
    assert record is not None, f"no cluster record in {directory}"
    return [(n.pid, n.started) for n in record.nodes]


def test_scenarios_pass_beside_a_loaded_cluster(tmp_path: Path) -> None:
    results: dict[str, dict[str, Any]] = {}
    clusters = [tmp_path / "neighbour" / "cluster"] + [tmp_path / n / "cluster" for n in NAMES]
    running_after = -1
    try:
        with open_neighbour(tmp_path / "neighbour") as neighbour:
            assert neighbour.running() == NEIGHBOUR_NODES
            for name in NAMES:
                out = tmp_path / name
                r, trace = run_scenario(load_scenario(find_scenario(name)), out=out)
                write_outputs(out, r, trace)
                results[name] = r
            running_after = neighbour.running()
    finally:
        left = {str(d): end_leftovers(d) for d in clusters if d.is_dir()}
    assert all(not procs for procs in left.values()), f"processes outlived the test: {left}"
    recorded = [p for d in clusters for p in _recorded(d)]
    assert len(recorded) == NEIGHBOUR_NODES + sum(r["nodes"] for r in results.values())
    assert all(pid > 0 for pid, _ in recorded)
    assert [p for p in recorded if process_state(*p) != "gone"] == []
    assert running_after == NEIGHBOUR_NODES, "the neighbour lost nodes during the runs"
    for name, r in results.items():
        failed = [e["description"] for e in r["expectations"] if e["status"] == "fail"]
        assert r["verdict"] == "pass", (name, r["error"], failed, str(tmp_path / name))
