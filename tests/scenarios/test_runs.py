"""``--runs K``: the aggregate (pass rates, percentiles), the verdict, ``pass_rate``, the output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scenarios.reporting.aggregate import aggregate, percentiles
from scenarios.runner import run_scenario_cli


def test_percentiles_count_never_as_infinity() -> None:
    p = percentiles([3.0, 1.0, None, 2.0])
    assert (p["n"], p["missing"]) == (4, 1)
    assert (p["p50"], p["p90"], p["max"]) == (2.0, None, None)  # the "never" is the tail
    assert p["values"] == [3.0, 1.0, None, 2.0]
    q = percentiles([float(i) for i in range(1, 101)])
    assert (q["p50"], q["p90"], q["p99"], q["max"]) == (50.0, 90.0, 99.0, 100.0)
    assert percentiles([])["p50"] is None


def _run(verdict: str, measured: float | None) -> dict[str, object]:
    status = "pass" if verdict == "pass" else "fail"
    return {
        "verdict": verdict,
        "expectations": [
            {
                "index": 0,
                "kind": "dead",
                "description": "d",
                "bound": 5.0,
                "unit": "s",
                "status": status,
                "measured": measured,
            }
        ],
        "detection": [],
        "convergence": [],
        "false_suspicions": {"count": 1},
    }


def test_verdict_follows_the_pass_rate() -> None:
    runs = [_run("pass", 1.0)] * 9 + [_run("fail", None)]
    assert aggregate(runs, 1.0)["verdict"] == "fail"
    summed = aggregate(runs, 0.9)
    assert summed["verdict"] == "pass"
    (e,) = summed["aggregate"]["expectations"]
    assert (e["passed"], e["applicable"], e["pass_rate"]) == (9, 10, 0.9)
    assert e["measured"]["missing"] == 1
    assert summed["aggregate"]["false_suspicions"]["p50"] == 1
    error = {"verdict": "error", "expectations": [], "detection": [], "convergence": []}
    assert aggregate([error, error], 0.5)["verdict"] == "error"


KILL = "nodes: 5\nseed: 40\nsteps: [{at: 1, kill: 4, name: k}]\nexpect: [{dead: 4, after: k}]\n"


def test_cli_runs_sim_writes_one_results_file_and_prints_a_line_per_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(KILL)
    out = tmp_path / "out"
    assert run_scenario_cli(str(path), sim=True, out=str(out), runs=4) == 0
    text = capsys.readouterr().out
    assert "4 runs, seeds 40..43" in text
    assert [f"run {i}/4 seed {39 + i}: PASS" in text for i in range(1, 5)] == [True] * 4
    assert "derived" in text
    assert f"report: {out / 'report.html'}" in text
    res = json.loads((out / "results.json").read_text())
    assert res["seeds"] == [40, 43]
    assert res["verdict"] == "pass"
    assert [r["seed"] for r in res["runs"]] == [40, 41, 42, 43]
    (e,) = res["aggregate"]["expectations"]
    assert e["bound_source"] == "derived"
    assert e["bound_detail"]["confidence"] == 0.999
    assert e["passed"] == 4
    assert e["measured"]["p50"] <= e["bound"]
    (det,) = res["aggregate"]["detection"]
    assert len(det["full_dead"]["values"]) == 4
    assert "<svg" in (out / "report.html").read_text()


def test_cli_runs_exit_status_and_pass_rate(tmp_path: Path) -> None:
    tight = KILL.replace("{dead: 4, after: k}", "{dead: 4, after: k, within: 5}")
    path = tmp_path / "t.yaml"
    path.write_text(tight)  # some seeds detect within 5 s, some do not
    res_of = lambda d: json.loads((tmp_path / d / "results.json").read_text())  # noqa: E731
    code = run_scenario_cli(str(path), sim=True, out=str(tmp_path / "a"), runs=10)
    res = res_of("a")
    passed = res["aggregate"]["passed"]
    assert 0 < passed < 10, "the bound should split these seeds"
    assert code == 1
    assert res["verdict"] == "fail"
    path.write_text(tight + f"pass_rate: {passed / 10}\n")
    assert run_scenario_cli(str(path), sim=True, out=str(tmp_path / "b"), runs=10) == 0
    assert res_of("b")["pass_rate_required"] == passed / 10


def test_results_name_a_step_on_every_node_of_that_moment_all() -> None:
    """A step's text says "on all" when it names every node the cluster had at that moment,
    a node added since included."""
    from scenarios import parse_scenario, run_scenario

    text = """
name: all
nodes: 3
workload: off
steps:
  - {at: 1, loss: {node: all, percent: 5}, name: a}
  - {at: 2, add: 1, name: grow}
  - {at: 4, loss: {node: all, percent: 5}, name: b}
  - {at: 5, loss: {node: 3, percent: 5}, name: c}
  - {at: 6, heal: true, name: heal}
"""
    results, _ = run_scenario(parse_scenario(text, "all.yaml", sim=True), sim=True, seed=1)
    texts = {s["step"]: s["text"] for s in results["steps"]}
    assert texts["a"] == texts["b"] == "loss 5 % on all", texts
    assert texts["c"] == "loss 5 % on 3", texts
