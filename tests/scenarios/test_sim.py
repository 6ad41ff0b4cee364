"""The library on swim's simulated network at 20-50 nodes: virtual time, deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios import library, load_scenario, parse_scenario, run_scenario, write_outputs
from scenarios.runner import run_scenario_cli

# A file with Serf agents and no simulated variant plays on real processes only (test_mixed.py).
LIBRARY = {p.stem: p for p in library() if not load_scenario(p).real_only}


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_scenario_passes_in_sim(name: str, tmp_path: Path) -> None:
    path = LIBRARY[name]
    sc = parse_scenario(path.read_text(), str(path), sim=True)
    results, trace = run_scenario(sc, sim=True)
    assert trace is not None, results["error"]
    assert results["mode"] == "sim"
    failed = [e for e in results["expectations"] if e["status"] == "fail"]
    assert results["verdict"] == "pass", failed
    if sc.sim_nodes is not None:  # a sim: section's size (the others play at their own)
        assert results["nodes"] >= 20
    write_outputs(tmp_path, results, trace)
    assert json.loads((tmp_path / "results.json").read_text())["verdict"] == "pass"
    assert "<svg" in (tmp_path / "report.html").read_text()


def test_same_seed_same_results() -> None:
    path = LIBRARY["kill_one"]
    sc = parse_scenario(path.read_text(), str(path), sim=True)
    a, _ = run_scenario(sc, sim=True, seed=11)
    b, _ = run_scenario(sc, sim=True, seed=11)
    c, _ = run_scenario(sc, sim=True, seed=12)
    assert a == b
    assert a["detection"] != c["detection"]


def test_cli_sim_exit_codes(tmp_path: Path) -> None:
    ok = tmp_path / "ok.yaml"
    ok.write_text(
        "nodes: 5\nsteps: [{at: 1, kill: 4, name: k}]\nexpect: [{dead: 4, within: 15, after: k}]\n"
    )
    assert run_scenario_cli(str(ok), sim=True, out=str(tmp_path / "a")) == 0
    bad = tmp_path / "impossible.yaml"
    bad.write_text(
        "nodes: 5\nsteps: [{at: 1, kill: 4, name: k}]\nexpect: [{dead: 4, within: 0.5, after: k}]\n"
    )
    assert run_scenario_cli(str(bad), sim=True, out=str(tmp_path / "b")) == 1
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    assert res["verdict"] == "fail"
    assert res["expectations"][0]["status"] == "fail"
    assert (tmp_path / "b" / "report.html").is_file()


def test_a_large_simulated_cluster_starts_converged_and_plays_kill_one() -> None:
    """Above ``JOIN_LIMIT`` nodes the simulation starts from the shared roster at time 0
    (scenarios.play.sim rule 1); a joined start is still there to ask for."""
    from scenarios.play.sim import JOIN_LIMIT, run_sim

    path = LIBRARY["kill_one"]
    sc = parse_scenario(path.read_text(), str(path), sim=True)
    large = parse_scenario(path.read_text(), str(path), nodes=JOIN_LIMIT + 1, sim=True)
    big, _ = run_scenario(large, sim=True)
    assert big["verdict"] == "pass", big["expectations"]
    assert run_sim(sc, nodes=JOIN_LIMIT + 1).t0 == 0.0
    assert run_sim(sc, nodes=8, start="bootstrap").t0 == 0.0
    assert run_sim(sc, nodes=8).t0 > 0.0  # joined first
    with pytest.raises(ValueError, match="start"):
        run_sim(sc, start="instant")
