"""Scenario files: the library parses, and every kind of mistake is named precisely."""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios import ScenarioError, library, load_scenario, parse_scenario, run_scenario_cli

GOOD = """
nodes: 4
seed: 3
workload: off
swim: {probe_interval: 0.5, probe_timeout: 0.2}
steps:
  - {at: 1, kill: 2, name: k}
  - {at: 2, pause: 1, for: 1.5}
  - {at: 4, partition: [[0], rest], name: split}
  - {at: 6, heal: true}
  - {at: 7, add: 2, induct: true}
  - {at: 8, loss: {node: all, percent: 5}}
  - {at: 8, delay: {node: 0, ms: 20}}
  - {at: 9, http: {node: 0, path: /api/health, expect: {status: 200, within: [0, 1]}}}
expect:
  - {dead: 2, seen_by: all, within: 8, after: k}
  - {never_dead: [0, "3-3"]}
  - {converged: true, after: split, within: 20}
  - {alive: 5, within: 5, after: add5}
"""


def test_library_parses_in_both_modes() -> None:
    files = library()
    assert len(files) >= 9
    for path in files:
        sc = load_scenario(path)
        assert sc.nodes <= 5, f"{path.name}: real runs stay small"
        assert sc.expectations, path.name
        if sc.real_only:  # Serf agents or a disk step, no simulated variant: refused in sim
            refused = "run on real processes only|disk faults need node processes"
            with pytest.raises(ScenarioError, match=refused):
                parse_scenario(path.read_text(), str(path), sim=True)
            continue
        big = parse_scenario(path.read_text(), str(path), sim=True)
        assert big.node_count() >= sc.node_count()


def test_good_scenario_fields() -> None:
    sc = parse_scenario(GOOD, "good.yaml")
    assert sc.nodes == 4
    assert sc.seed == 3
    assert not sc.workload
    assert sc.swim["probe_interval"] == 0.5
    kinds = [s.kind for s in sc.steps]
    assert kinds == ["kill", "pause", "partition", "heal", "add", "loss", "delay", "http"]
    assert sc.steps[1].duration == 1.5
    assert sc.steps[2].partition_groups([0, 1, 2, 3]) == ((0,), (1, 2, 3))
    assert sc.steps[4].count == 2
    assert sc.steps[4].induct
    assert sc.steps[7].expect is not None
    assert sc.steps[7].expect.within == (0.0, 1.0)
    assert sc.expectations[1].subjects == (0, 3)
    assert sc.node_count() == 6
    assert sc.duration == pytest.approx(9 + 20 + 2)


BAD = [
    ("nodes: 0\nsteps: []\nexpect: []", "nodes: 0 is out of range"),
    ("nodes: 3\nbogus: 1", "bogus: unknown key"),
    ("nodes: 3\nsteps: [{at: 1, kill: 7}]", "step 1 (kill): node 7 does not exist"),
    ("nodes: 3\nsteps: [{at: 1}]", "step 1: needs exactly one action"),
    ("nodes: 3\nsteps: [{kill: 1}]", "step 1 (kill): missing 'at'"),
    ("nodes: 3\nsteps: [{at: 2, kill: 1}, {at: 1, kill: 2}]", "step 2 (kill): at 1s comes before"),
    ("nodes: 3\nsteps: [{at: 1, kill: 1, for: 2}]", "step 1 (kill): unknown key 'for'"),
    ("nodes: 3\nsteps: [{at: x, kill: 1}]", "step 1 (kill): at: expected a number"),
    ("nodes: 3\nsteps: [{at: 1, partition: [[0], [1]]}]", "node 2 is in no group"),
    ("nodes: 3\nsteps: [{at: 1, partition: [[0, 1], [1, 2]]}]", "node 1 is in more than one"),
    ("nodes: 3\nsteps: [{at: 1, loss: {node: 1, percent: 120}}]", "120 is out of range"),
    ("nodes: 3\nsteps: [{at: 1, http: {node: 1, path: api}}]", "path: expected an absolute path"),
    ("nodes: 3\nexpect: [{dead: 1}]", "expectation 1 (dead): a derived bound needs 'after'"),
    (
        "nodes: 3\nsteps: [{at: 1, partition: [[0], rest], name: p}]\n"
        "expect: [{dead: 0, after: p}]",
        "no bound is derived for dead after a partition step: give 'within:'",
    ),
    ("nodes: 3\nexpect: [{dead: 1, within: 2, after: nope}]", "after: no step named 'nope'"),
    ("nodes: 3\nexpect: [{dead: leader, within: 2}]", "'leader' needs 'after'"),
    ("nodes: 3\nexpect: [{sometimes: 1}]", "expectation 1: needs exactly one of"),
    ("nodes: 3\nswim: {probe_interval: -1}", "swim: swim setting 'probe_interval'"),
    ("nodes: 3\nswim: {bogus: 1}", "unknown swim setting 'bogus'"),
    ("nodes: [3", "not valid YAML"),
    ("- 1\n- 2", "expected a mapping"),
]


@pytest.mark.parametrize(("text", "problem"), BAD)
def test_bad_scenarios_name_file_step_and_problem(text: str, problem: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "bad.yaml")
    msg = str(info.value)
    assert msg.startswith("bad.yaml: "), msg
    assert problem in msg, msg


def test_cli_bad_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("nodes: 3\nsteps: [{at: 1, kill: 9}]\n")
    assert run_scenario_cli(str(bad), sim=True, out=str(tmp_path / "out")) == 2
    err = capsys.readouterr().err
    assert "broken.yaml: step 1 (kill): node 9 does not exist" in err
    assert "Traceback" not in err
    assert run_scenario_cli(str(tmp_path / "missing.yaml"), sim=True) == 2
    assert "no such file" in capsys.readouterr().err
