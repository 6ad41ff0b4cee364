"""Expected versus false suspicions and deaths, from hand-written traces and from the simulation."""

from __future__ import annotations

from scenarios import Action, Trace, parse_scenario, run_scenario
from scenarios.reporting.results import results_of
from tests.support.traces import event as ev
from tests.support.traces import joined

SPLIT = """
nodes: 4
steps:
  - {at: 1, partition: [[0, 1], rest], name: split}
  - {at: 5, heal: true, name: heal}
expect:
  - {never_dead: all}
  - {max_false_suspicions: 0}
"""


def sim_trace(n: int, extra: list[dict[str, object]], actions: list[Action]) -> Trace:
    """n nodes joined by t = 0.5, started at 10, ended at 30, with these events and actions."""
    return Trace(
        mode="sim",
        t0=10.0,
        end=30.0,
        initial=tuple(range(n)),
        events=[*joined(n), *extra],
        actions=actions,
    )


def split_trace(extra: list[dict[str, object]]) -> Trace:
    split = Action(11.0, "partition", "split", groups=((0, 1), (2, 3)))
    return sim_trace(4, extra, [split, Action(15.0, "heal", "heal")])


def classes(res: dict[str, object]) -> list[tuple[int, int, str, str, str]]:
    events = res["suspicions"]["events"]  # type: ignore[index]
    return [(e["observer"], e["subject"], e["state"], e["class"], e["reason"]) for e in events]


def test_a_partitions_verdicts_are_expected_even_when_they_merge_back_after_the_heal() -> None:
    sc = parse_scenario(SPLIT, "s.yaml")
    events = [
        ev(12.0, 2, 0, "suspected", cause="indirect_failed"),  # across the cut: expected
        ev(12.1, 3, 0, "suspected", cause="gossip"),  # the same rumour, second-hand
        ev(14.0, 2, 0, "dead", "suspected", cause="suspicion_timeout"),
        # long after the heal, node 1 (same side as 0) hears the old verdict by push/pull
        ev(24.0, 1, 0, "suspected", cause="pushpull"),
        ev(24.1, 1, 0, "alive", "suspected", cause="refute"),
    ]
    res = results_of(sc, split_trace(events), "sim", 0)
    assert classes(res) == [
        (2, 0, "suspected", "expected", "partition"),
        (3, 0, "suspected", "expected", "partition"),
        (2, 0, "dead", "expected", "partition"),
        (1, 0, "suspected", "expected", "partition"),
    ]
    assert res["false_suspicions"]["count"] == 0  # type: ignore[index]
    assert res["expected_suspicions"]["count"] == 3  # type: ignore[index]
    assert res["verdict"] == "pass"


def test_a_suspicion_inside_one_side_of_a_partition_is_false() -> None:
    sc = parse_scenario(SPLIT, "s.yaml")
    # 1 could reach 0 (same side), and this rumour (incarnation 3) has no expected origin
    bad = ev(12.0, 1, 0, "suspected", cause="indirect_failed")
    bad["incarnation"] = 3
    res = results_of(sc, split_trace([bad]), "sim", 0)
    assert classes(res) == [(1, 0, "suspected", "false", "")]
    never_dead, max_false = res["expectations"]  # type: ignore[misc]
    assert never_dead["status"] == "pass"
    assert max_false["status"] == "fail"
    assert max_false["measured"] == 1
    assert max_false["unit"] == "events"


def test_loss_explains_a_suspicion_but_not_a_death() -> None:
    text = (
        "nodes: 3\nsteps: [{at: 1, loss: {node: 2, percent: 20}, name: l},"
        " {at: 9, heal: true, name: h}]\nexpect: [{never_dead: all}]"
    )
    sc = parse_scenario(text, "l.yaml")
    tr = sim_trace(
        3,
        [
            ev(13.0, 0, 2, "suspected", cause="indirect_failed"),
            ev(16.0, 0, 2, "dead", "suspected", cause="suspicion_timeout"),
        ],
        [Action(11.0, "loss", "l", (2,), value=20.0), Action(19.0, "heal", "h")],
    )
    res = results_of(sc, tr, "sim", 0)
    assert classes(res) == [(0, 2, "suspected", "expected", "loss"), (0, 2, "dead", "false", "")]
    assert res["expectations"][0]["status"] == "fail"  # type: ignore[index]


def test_a_paused_observer_and_a_killed_subject_are_expected() -> None:
    text = (
        "nodes: 3\nsteps: [{at: 1, pause: 0, name: p}, {at: 4, resume: 0, name: r},"
        " {at: 6, kill: 2, name: k}]"
    )
    sc = parse_scenario(text, "p.yaml")
    tr = sim_trace(
        3,
        [
            ev(14.2, 0, 1, "suspected", cause="indirect_failed"),  # its probe timed out frozen
            ev(17.0, 1, 2, "suspected", cause="indirect_failed"),
        ],
        [
            Action(11.0, "pause", "p", (0,)),
            Action(14.0, "resume", "r", (0,)),
            Action(16.0, "kill", "k", (2,)),
        ],
    )
    res = results_of(sc, tr, "sim", 0)
    assert classes(res) == [
        (0, 1, "suspected", "expected", "observer paused"),
        (1, 2, "suspected", "expected", "killed"),
    ]


def test_partition_heal_in_sim_has_no_false_suspicions() -> None:
    """Issue 13: the 319 "false suspicions" of partition_heal were all of cut-off nodes."""
    from scenarios import find_scenario, load_scenario

    sc = load_scenario(find_scenario("partition_heal"), sim=True)
    res, _ = run_scenario(sc, sim=True)
    assert res["verdict"] == "pass"
    assert res["false_suspicions"]["count"] == 0
    assert res["false_deaths"]["count"] == 0
    assert res["expected_suspicions"]["count"] > 100
    assert {e["reason"] for e in res["suspicions"]["events"]} == {"partition"}
