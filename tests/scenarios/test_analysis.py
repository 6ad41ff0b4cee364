"""The judgement of a run from hand-written traces: latencies, false positives, expectations."""

from __future__ import annotations

from typing import Any

import pytest

from scenarios import Action, HttpResult, Trace, Views, analyse, parse_scenario, render_report
from scenarios.judge.durability import judge_storage
from scenarios.reporting.results import results_of
from tests.support.traces import event as ev
from tests.support.traces import joined

KILL = """
nodes: 3
steps: [{at: 1, kill: 2, name: kill}]
expect:
  - {dead: 2, within: 5, after: kill}
  - {never_dead: [0, 1]}
  - {leader_change: true, within: 5, after: kill}
"""


def kill_trace() -> Trace:
    events = [
        *joined(3),
        ev(12.0, 0, 2, "suspected"),
        ev(12.5, 1, 2, "suspected"),
        ev(14.0, 0, 2, "dead", "suspected"),
        ev(14.6, 1, 2, "dead", "suspected"),
    ]
    return Trace(
        mode="real",
        t0=10.0,
        end=20.0,
        initial=(0, 1, 2),
        events=events,
        actions=[Action(11.0, "kill", "kill", (2,))],
        launched=9.0,
    )


def test_kill_detection_and_expectations() -> None:
    sc = parse_scenario(KILL, "k.yaml")
    res = results_of(sc, kill_trace(), "real", 0)
    (det,) = res["detection"]
    assert det["subject"] == 2
    assert det["observers"] == 2
    assert det["first_suspect"] == 1.0
    assert det["first_dead"] == 3.0
    assert det["full_dead"] == 3.6
    assert det["completeness"] == 1.0
    assert [e["status"] for e in res["expectations"]] == ["pass", "pass", "fail"]
    assert res["expectations"][0]["measured"] == 3.6
    # the leader (0) was not killed, so there is no leader change
    assert res["verdict"] == "fail"
    assert res["false_deaths"]["count"] == 0
    assert res["false_suspicions"]["count"] == 0
    assert res["convergence"][0] == {"step": "launch", "seconds": 1.0}


def test_dead_bound_missed_names_the_late_observer() -> None:
    sc = parse_scenario(
        KILL.replace(
            "within: 5, after: kill}\n  - {never", "within: 3.2, after: kill}\n  - {never"
        ),
        "k.yaml",
    )
    res = results_of(sc, kill_trace(), "real", 0)
    first = res["expectations"][0]
    assert first["status"] == "fail"
    assert "[1]" in first["detail"]


def test_leader_change_after_leader_kill() -> None:
    text = (
        "nodes: 3\nsteps: [{at: 1, kill: leader, name: k}]\nexpect:\n"
        "  - {leader_change: true, within: 5, after: k}\n  - {dead: leader, within: 5, after: k}\n"
    )
    sc = parse_scenario(text, "l.yaml")
    events = [*joined(3), ev(13.0, 1, 0, "dead"), ev(13.5, 2, 0, "dead")]
    tr = Trace(
        mode="sim",
        t0=10.0,
        end=20.0,
        initial=(0, 1, 2),
        events=events,
        actions=[Action(11.0, "kill", "k", (0,))],
    )
    res = results_of(sc, tr, "sim", 0)
    lc, dead = res["expectations"]
    assert lc["status"] == "pass"
    assert lc["measured"] == 2.5
    assert "0 -> 1" in lc["detail"]
    assert dead["status"] == "pass"
    assert dead["subject"] == 0


def test_false_positives_ignore_faults_but_count_healthy_victims() -> None:
    sc = parse_scenario(
        "nodes: 3\nsteps: [{at: 1, pause: 2, name: p}, {at: 3, resume: 2, name: r}]", "p.yaml"
    )
    events = [
        *joined(3),
        ev(11.5, 0, 2, "suspected"),  # during the pause: a true suspicion
        ev(13.2, 0, 2, "alive", "suspected"),
        ev(15.0, 1, 0, "suspected"),  # node 0 never had a fault: false
        ev(16.0, 1, 0, "dead", "suspected"),
    ]
    tr = Trace(
        mode="sim",
        t0=10.0,
        end=20.0,
        initial=(0, 1, 2),
        events=events,
        actions=[Action(11.0, "pause", "p", (2,)), Action(13.0, "resume", "r", (2,))],
    )
    res = results_of(sc, tr, "sim", 0)
    assert [(f["observer"], f["subject"]) for f in res["false_suspicions"]["events"]] == [(1, 0)]
    assert res["false_deaths"]["count"] == 1
    assert res["false_deaths"]["events"][0]["cause"] == "probe"


def test_views_reset_on_restart_and_convergence_after() -> None:
    sc = parse_scenario(
        "nodes: 2\nsteps: [{at: 1, restart: 1, name: r}]\n"
        "expect: [{converged: true, within: 2, after: r}]",
        "r.yaml",
    )
    events = [*joined(2), ev(11.5, 1, 0, "alive", None, "join")]
    tr = Trace(
        mode="real",
        t0=10.0,
        end=15.0,
        initial=(0, 1),
        events=events,
        actions=[Action(11.0, "restart", "r", (1,))],
    )
    views = Views(tr)
    assert views.state(1, 0, 11.2) is None  # forgotten at the restart
    assert views.state(1, 0, 11.6) == "alive"
    res = results_of(sc, tr, "real", 0)
    assert res["expectations"][0]["measured"] == 0.5
    assert [c["seconds"] for c in res["convergence"] if c["step"] == "r"] == [0.5]


def test_http_expectations_real_and_sim() -> None:
    text = (
        "nodes: 2\nsteps: [{at: 1, name: fwd, http: {node: 0, path: /api/nodes/1/workers,"
        " expect: {status: 503, within: [5, 6]}}}]"
    )
    sc = parse_scenario(text, "h.yaml")
    tr = Trace(
        mode="real",
        t0=10.0,
        end=20.0,
        initial=(0, 1),
        events=joined(2),
        actions=[Action(11.0, "http", "fwd", (0,))],
        http=[HttpResult("fwd", 0, "GET", "/api/nodes/1/workers", 11.0, 5.02, 503)],
    )
    (h,) = analyse(tr, sc).expectations
    assert h["status"] == "pass"
    assert h["measured"] == 5.02
    tr.http[0] = HttpResult("fwd", 0, "GET", "/x", 11.0, 0.01, 503)
    assert analyse(tr, sc).expectations[0]["status"] == "fail"
    tr.mode = "sim"
    assert analyse(tr, sc).expectations[0]["status"] == "not_applicable"


def test_report_is_self_contained() -> None:
    sc = parse_scenario(KILL, "k.yaml")
    tr = kill_trace()
    page = render_report(results_of(sc, tr, "real", 0), tr)
    assert page.startswith("<!doctype html>")
    assert "<svg" in page
    assert "<style>" in page
    for ref in ("src=", "href=", "http://", "https://", "@import", "url("):
        assert ref not in page.replace("http://www.w3.org/2000/svg", ""), ref
    assert "node 0 sees 2: dead" in page  # the band of observer 0 shows the subject's state


@pytest.mark.parametrize(
    ("storage", "status", "said"),
    [
        ({"checked": 12, "lost_count": 0, "lost": []}, "pass", "12 acknowledged records"),
        (
            {"checked": 12, "lost_count": 1,
             "lost": [{"offset": 8192, "size": 100, "why": "reads back different bytes"}]},
            "fail",
            "first: 100 bytes at 8192: reads back different bytes",
        ),
        ({"checked": 0, "lost_count": 0, "lost": []}, "fail", "no write was acknowledged"),
        ({"error": "the array's owner did not answer: boom"}, "fail", "did not answer"),
        (None, "fail", "no storage"),
    ],
)  # fmt: skip
def test_no_lost_writes_is_judged_from_the_owners_read_back(
    storage: dict[str, Any] | None, status: str, said: str
) -> None:
    trace = Trace("real", 0.0, 10.0, (0, 1), [], storage=storage)
    got = judge_storage(trace)
    assert got["status"] == status
    assert said in got["detail"]
    assert judge_storage(Trace("sim", 0.0, 10.0, (0, 1), []))["status"] == "not_applicable"
