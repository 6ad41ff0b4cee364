"""Scenario files on mixed clusters (``serf: M``): the key and its errors, word for word; member
numbers (agents after the nodes) in steps and expectations; what an agent has no door for,
refused at load time; sim, ``-n`` and ``--hostfile`` refused with one line and exit status 2;
an agent's view, as looked at with ``serf members``, judged and reported like a node's. No
process is started here (the real run is test_mixed.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from scenarios import ScenarioError, open_cluster, parse_scenario, run_scenario_cli
from scenarios.judge.analysis import analyse
from scenarios.judge.trace import Action, Trace
from scenarios.play.agents import LOOK_CAUSE, AgentLooks
from scenarios.replay import scenario_of
from scenarios.reporting.report import render_report
from scenarios.reporting.results import results_of

MIXED = """\
nodes: 3
serf: 2
steps:
  - {at: 1, kill: 2, name: k}
expect:
  - {dead: 2, seen_by: all, after: k}
"""


def _refused(text: str, **kw: object) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "m.yaml", **kw)  # type: ignore[arg-type]
    return str(info.value)


@pytest.mark.parametrize("value", ["true", "-1", "65", "1.5", "'2'", "[1]", "null"])
def test_a_bad_serf_count_is_one_error_naming_the_key_and_the_range(value: str) -> None:
    shown = {"true": "True", "'2'": "'2'", "null": "None"}.get(value, value)
    assert _refused(MIXED.replace("serf: 2", f"serf: {value}")) == (
        f"m.yaml: serf: expected the number of Serf agents, an integer 0..64, got {shown}"
    )


def test_agents_are_the_members_after_the_nodes_and_bounds_count_every_member() -> None:
    mixed = parse_scenario(MIXED, "m.yaml")
    alone = parse_scenario(MIXED.replace("serf: 2", "serf: 0"), "m.yaml")
    five = parse_scenario(MIXED.replace("nodes: 3\nserf: 2", "nodes: 5"), "m.yaml")
    assert (mixed.serf, mixed.agents, mixed.node_count()) == (2, (3, 4), 5)
    assert (alone.serf, alone.agents, alone.node_count()) == (0, (), 3)
    assert mixed.expectations[0].within == five.expectations[0].within
    assert mixed.expectations[0].within != alone.expectations[0].within
    steps = "  - {at: 1, kill: 4, name: k}\n  - {at: 2, pause: 3, for: 1}\n  - {at: 9, restart: 4}"
    text = MIXED.replace("  - {at: 1, kill: 2, name: k}", steps).replace("dead: 2", "dead: 4")
    played = parse_scenario(text, "m.yaml")
    assert [(s.kind, s.target) for s in played.steps] == [
        ("kill", 4),
        ("pause", 3),
        ("restart", 4),
    ]
    # a node added to a mixed cluster takes the number after every member's
    added = MIXED.replace(
        "  - {at: 1, kill: 2, name: k}", "  - {at: 1, add: 1}\n  - {at: 2, kill: 5, name: k}"
    )
    assert parse_scenario(added.replace("dead: 2", "dead: 5"), "m.yaml").steps[1].target == 5
    assert _refused(MIXED.replace("kill: 2", "kill: 5")) == (
        "m.yaml: step 1 (kill): node 5 does not exist (nodes 0..4 at that time)"
    )


@pytest.mark.parametrize(
    ("step", "error"),
    [
        (
            "{at: 1, http: {node: 3, path: /api/health}}",
            "step 1 (http): member 3 is a Serf agent (serf-3): no dashboard",
        ),
        (
            "{at: 1, loss: {node: 4, percent: 5}}",
            "step 1 (loss): member 4 is a Serf agent (serf-4), without fault injection "
            "(loss on all acts on the rtsim nodes)",
        ),
        (
            "{at: 1, delay: {node: 3, ms: 50}}",
            "step 1 (delay): member 3 is a Serf agent (serf-3), without fault injection "
            "(delay on all acts on the rtsim nodes)",
        ),
        (
            "{at: 1, partition: [[0, 3], rest]}",
            "step 1 (partition): Serf agents serf-3, serf-4 are in different groups: only "
            "rtsim nodes drop packets, so the path between two agents cannot be cut; put every "
            "agent in one group",
        ),
        (
            "{at: 1, add: 1, induct: true}",
            "step 1 (add): induct: a node of a cluster with Serf agents joins by name; "
            "leave it out",
        ),
    ],
)
def test_what_an_agent_has_no_door_for_is_refused_at_load_time(step: str, error: str) -> None:
    text = f"nodes: 3\nserf: 2\nsteps:\n  - {step}\n"
    assert _refused(text) == f"m.yaml: {error}"
    assert parse_scenario(text.replace("serf: 2", "serf: 0").replace("nodes: 3", "nodes: 5"), "m")


def test_loss_on_all_and_a_partition_keeping_the_agents_together_are_taken() -> None:
    text = (
        "nodes: 3\nserf: 2\nsteps:\n  - {at: 1, loss: {node: all, percent: 5}}\n"
        "  - {at: 2, partition: [[0, 3, 4], rest]}\n  - {at: 3, partition: [[1], rest]}\n"
    )
    assert len(parse_scenario(text, "m.yaml").steps) == 3


def test_sim_refuses_a_file_with_agents_unless_its_sim_section_sets_none() -> None:
    assert _refused(MIXED, sim=True) == (
        "m.yaml: serf: 2 Serf agents run on real processes only, not in sim (a sim: section "
        "with serf: 0 gives the file a simulated variant)"
    )
    assert parse_scenario(MIXED, "m.yaml").real_only
    variant = MIXED + "sim: {serf: 0, nodes: 20}\n"
    assert not parse_scenario(variant, "m.yaml").real_only
    simulated = parse_scenario(variant, "m.yaml", sim=True)
    assert (simulated.serf, simulated.nodes, simulated.agents) == (0, 20, ())
    assert _refused(MIXED + "sim: {serf: 1}\n") == (
        "m.yaml: sim.serf: the simulation runs no Serf agents: 0 only, got 1"
    )
    assert _refused(MIXED, nodes=5) == (
        "m.yaml: serf: the node count of a file with Serf agents cannot be overridden (-n): "
        "the agents are numbered after the nodes, so its steps would name other members"
    )


def test_the_command_refuses_sim_and_hostfile_with_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "mixed.yaml"
    path.write_text(MIXED)
    done = subprocess.run(
        [sys.executable, "-m", "scenarios.command", "scenario", str(path), "--sim"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr == (
        f"rt_cluster scenario: {path}: serf: 2 Serf agents run on real processes only, not in "
        "sim (a sim: section with serf: 0 gives the file a simulated variant)\n"
    )
    assert done.stdout == ""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("127.0.0.1:7000\n127.0.0.1:7001\n127.0.0.1:7002\n")
    assert run_scenario_cli(str(path), hostfile=str(hostfile)) == 2
    err = capsys.readouterr().err
    assert err == (
        f"rt_cluster scenario: {path}: serf: a file with 2 Serf agents starts them beside the "
        "nodes it launches; it does not play on a running cluster (--hostfile)\n"
    )


def test_an_agents_looks_become_events_and_a_restart_starts_its_view_anew() -> None:
    looks = AgentLooks((), {})
    looks.take(3, {0: "alive", 1: "alive"}, 10.0)
    looks.take(3, {0: "alive", 1: "alive"}, 10.5)  # no change, no event
    looks.take(3, None, 11.0)  # no answer
    looks.take(3, {0: "alive", 1: "dead"}, 11.5)
    looks.forget(3)
    looks.take(3, {0: "alive", 1: "dead"}, 12.0)
    seen = [(e["mono"], e["subject"], e["old"], e["new"]) for e in looks.found]
    assert seen == [
        (10.0, 0, None, "alive"),
        (10.0, 1, None, "alive"),
        (11.5, 1, "alive", "dead"),
        (12.0, 0, None, "alive"),
        (12.0, 1, None, "dead"),
    ]
    assert {e["observer"] for e in looks.found} == {3}
    assert {e["cause"] for e in looks.found} == {LOOK_CAUSE}
    assert (looks.looks[3], looks.silent[3]) == (4, 1)


def _event(t: float, o: int, s: int, old: str | None, new: str, cause: str) -> dict[str, object]:
    return {"mono": t, "observer": o, "subject": s, "old": old, "new": new, "cause": cause}


def test_an_agent_is_judged_reported_and_named_like_a_member() -> None:
    """Node 2 is killed at 101; node 0 and agent 3 see it dead, agent 4 never does: the
    expectation fails at 4 alone, and results and report name the agents."""
    scenario = parse_scenario(MIXED.replace("seen_by: all, ", "within: 8, "), "m.yaml")
    events = [_event(99.0, o, s, None, "alive", "join") for o in (0, 1) for s in range(5)]
    events += [_event(99.5, o, s, None, "alive", LOOK_CAUSE) for o in (3, 4) for s in range(5)]
    events += [
        _event(104.0, 0, 2, "alive", "dead", "suspicion_timeout"),
        _event(104.2, 1, 2, "alive", "dead", "gossip"),
        _event(104.5, 3, 2, "alive", "dead", LOOK_CAUSE),
    ]
    trace = Trace(
        mode="real",
        t0=100.0,
        end=120.0,
        initial=(0, 1, 2, 3, 4),
        events=events,
        actions=[Action(101.0, "kill", "k", (2,)), Action(110.0, "loss", "l", (0, 1, 2), value=5)],
        agents={3: "serf-3", 4: "serf-4"},
    )
    (dead,) = analyse(trace, scenario).expectations
    assert (dead["status"], dead["detail"]) == ("fail", "subject 2; not within the bound at: [4]")
    results = results_of(scenario, trace, "real", 1)
    assert (results["nodes"], results["members"]) == (3, 5)
    agents = {a["name"]: a for a in results["agents"]}
    assert list(agents) == ["serf-3", "serf-4"]
    assert agents["serf-3"]["member"] == 3
    assert agents["serf-3"]["view"] == {
        "0": "alive",
        "1": "alive",
        "2": "dead",
        "3": "alive",
        "4": "alive",
    }
    assert agents["serf-3"]["changes"][-1] == {
        "t": 4.5,
        "subject": 2,
        "old": "alive",
        "new": "dead",
    }
    assert agents["serf-4"]["view"]["2"] == "alive"
    assert results["steps"][1]["text"] == "loss 5 % on all"  # all: every node, no agent
    json.dumps(results)
    page = render_report(results, trace)
    assert "Serf agents <b>2</b>" in page
    assert "serf-3 (Serf agent)" in page  # the timeline's band of agent 3 (alone: its view differs)
    assert "2 dead" in page  # its view at the end


async def test_a_failed_mixed_chaos_tests_file_replays_its_agents_as_serf() -> None:
    """``scenario_of`` (a failed chaos test's file) keeps the agents as ``serf:``, numbered
    as the test numbered them; a sim cluster stands in for the mixed one (no process)."""
    async with open_cluster(5, mode="sim", seed=1) as c:
        c.agents = {3: "serf-3", 4: "serf-4"}
        await c.kill(4)
        await c.wait_dead(4, within=30)
        form = scenario_of(c)
    assert (form["nodes"], form["serf"]) == (3, 2)
    replay = parse_scenario(yaml.safe_dump(form), "scenario.yaml")
    assert (replay.serf, replay.agents, replay.steps[0].target) == (2, (3, 4), 4)
