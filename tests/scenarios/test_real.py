"""The library on real node processes at 3-5 nodes (each run well under 40 s)."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest

from scenarios import library, load_scenario, run_scenario, write_outputs

pytestmark = pytest.mark.slow
LIBRARY = {p.stem: p for p in library()}


def _kill_leftovers(out: Path) -> None:
    rec = out / "cluster" / "cluster.json"
    if rec.is_file():
        for n in json.loads(rec.read_text()).get("nodes", []):
            if n.get("pid"):
                try:
                    os.killpg(int(n["pid"]), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_scenario_passes_on_processes(name: str, tmp_path: Path) -> None:
    sc = load_scenario(LIBRARY[name])
    assert sc.nodes <= 5
    try:
        results, trace = run_scenario(sc, out=tmp_path)
        write_outputs(tmp_path, results, trace)
    finally:
        _kill_leftovers(tmp_path)
    assert trace is not None, results["error"]
    failed = [e for e in results["expectations"] if e["status"] == "fail"]
    assert results["verdict"] == "pass", (failed, str(tmp_path))
    assert results["mode"] == "real"
    assert results["events"] > 0
    rec = json.loads((tmp_path / "cluster" / "cluster.json").read_text())
    assert {n["state"] for n in rec["nodes"]} <= {"stopped", "killed"}
