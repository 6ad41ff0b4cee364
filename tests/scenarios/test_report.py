"""The report pages from hand-made results and traces: axis, folding, height, text, many runs."""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from scenarios import Action, Trace, render_report
from scenarios.reporting.charts import CHAR_PX, DASH, id_ranges, lanes, tick_label, tick_step, ticks
from scenarios.reporting.report import action_text
from scenarios.reporting.runs_page import render_runs
from tests.support.traces import event, joined

HOSTILE = "<script>alert(1)</script>"


def en(text: str) -> str:
    """Text with its ``~`` written as the en dash the pages put in ranges ("0~14")."""
    return text.replace("~", DASH)


def ev(t: float, o: int, s: int, new: str, cause: str = "probe") -> dict[str, Any]:
    """An event whose old state the report does not read (None)."""
    return event(t, o, s, new, None, cause)


def svg_of(page: str, cls: str) -> str:
    found = re.search(rf"<svg[^>]*class='{cls}'.*?</svg>", page, re.S)
    assert found, cls
    return found.group(0)


def height(svg: str) -> int:
    found = re.search(r"height='(\d+)'", svg)
    assert found
    return int(found.group(1))


def axis_labels(svg: str) -> list[str]:
    return re.findall(r"<text x='[\d.]+' y='14' text-anchor='middle'>([^<]*)</text>", svg)


def expectation(kind: str, description: str, bound: Any, **rest: Any) -> dict[str, Any]:
    base = {
        "kind": kind,
        "description": description,
        "bound": bound,
        "bound_source": "file",
        "bound_detail": None,
        "status": "pass",
        "measured": None,
        "unit": "s",
        "detail": "",
    }
    return {**base, **rest}  # fmt: skip


def accusation(o: int, s: int, t: float, cls: str, reason: str = "") -> dict[str, Any]:
    return {"observer": o, "subject": s, "t": t, "since": t - 0.1, "cause": "gossip",
            "state": "suspected", "class": cls, "reason": reason}  # fmt: skip


def step(t: float, kind: str, nodes: Any = (), groups: Any = (), value: float = 0.0) -> Any:
    return {"t": t, "kind": kind, "step": f"{kind}-step", "nodes": list(nodes),
            "groups": [list(g) for g in groups], "value": value}  # fmt: skip


DERIVED = {"confidence": 0.999, "terms": {"first probe": 6.75, "suspicion (Min)": 4.43},
           "formula": "D1 + T + Min + spread"}  # fmt: skip


def one_run(**extra: Any) -> dict[str, Any]:
    """A results dict of one run in the schema's shape (issue 13)."""
    false_one = accusation(1, 3, 4.0, "false")
    return {
        "scenario": "kill", "description": "kill node 2", "source": "k.yaml", "mode": "real",
        "seed": 3, "nodes": 5, "duration": 10.0, "verdict": "pass", "error": None,
        "expectations": [
            expectation("dead", "node 2 seen dead by all within 12.4 s after kill", 12.4,
                        bound_source="derived", bound_detail=DERIVED, measured=3.6),
            expectation("never_dead", "no false death", None, measured=0, unit="events"),
            expectation("converged", "converged within 25 s after heal", 25.0, status="fail"),
        ],
        "detection": [],
        "suspicions": {"false": 1, "expected": 1,
                       "events": [accusation(0, 2, 1.2, "expected", "killed"), false_one]},
        "false_suspicions": {"count": 1, "events": [false_one]},
        "false_deaths": {"count": 0, "events": []},
        "expected_suspicions": {"count": 1},
        "expected_deaths": {"count": 0},
        "convergence": [{"step": "launch", "seconds": 1.0}],
        "steps": [step(1.0, "partition", groups=[[0, 1], [2, 3, 4]]),
                  step(2.0, "loss", range(5), value=10.6), step(3.0, "delay", [0, 1], value=200)],
        "http": [],
        "events": 12,
        **extra,
    }  # fmt: skip


# ---- the time axis ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lo", "hi", "px"),
    [(-1.3, 8.7, 90.0), (-2.0, 64.0, 14.0), (0.0, 3600.0, 0.25), (-0.4, 0.6, 900.0)],
)
def test_ticks_are_whole_seconds_that_do_not_overlap(lo: float, hi: float, px: float) -> None:
    step = tick_step(lo, hi, px, "s", minimum=1)
    values = ticks(lo, hi, step)
    labels = [tick_label(v, step, "s") for v in values]
    assert labels, (lo, hi)
    assert len(set(labels)) == len(labels)
    for v, text in zip(values, labels, strict=True):
        assert lo - 1e-9 <= v <= hi + 1e-9
        assert re.fullmatch(r"-?\d+ s", text), text
        assert text != "-0 s"
        assert float(text[:-2]) == v  # the label says exactly where it stands
    widest = max(len(t) for t in labels) * CHAR_PX
    assert step * px >= widest  # neighbours' labels cannot touch


def test_timeline_axis_counts_whole_seconds_from_the_start() -> None:
    tr = Trace(
        mode="real",
        t0=10.0,
        end=23.37,
        initial=(0, 1, 2),
        launched=8.66,
        events=[*joined(3, 9.0), ev(13.1, 0, 2, "suspected"), ev(14.2, 0, 2, "dead")],
        actions=[Action(11.05, "kill", "kill", (2,))],
    )
    labels = axis_labels(svg_of(render_report(one_run(), tr), "timeline"))
    assert labels[0] == "-1 s"
    assert "0 s" in labels
    assert "-0 s" not in labels
    assert len(set(labels)) == len(labels)
    assert all(re.fullmatch(r"-?\d+ s", t) for t in labels)
    assert [int(t[:-2]) for t in labels] == sorted(int(t[:-2]) for t in labels)


# ---- folding and height --------------------------------------------------------------------------


def test_identical_observers_fold_into_one_band() -> None:
    # observers 0, 1, 3, 4 see node 2 go suspected and dead at the same moments; 5-9 see nothing
    events = [
        *joined(10),
        *(ev(t, o, 2, st) for o in (0, 1, 3, 4) for t, st in ((12.0, "suspected"), (14.0, "dead"))),
    ]
    tr = Trace(
        mode="sim",
        t0=10.0,
        end=20.0,
        initial=tuple(range(10)),
        events=events,
        actions=[Action(11.0, "kill", "kill", (2,))],
    )
    svg = svg_of(render_report(one_run(), tr), "timeline")
    assert "observers 0, 1, 3, 4 (4): same view (+8 always alive)" in svg
    assert en("observers 5~9 (5): same view, nothing changed") in svg
    assert svg.count("font-weight='600'") == 3  # those two and node 2 (killed)


def partition_trace(n: int = 30, seed: int = 1) -> Trace:
    """Two halves cut apart at 2 s and healed at 32 s; each side declares the other dead."""
    rng = random.Random(seed)
    half = n // 2
    events = joined(n)
    for o in range(n):
        for s in range(n):
            if o != s and (o < half) != (s < half):
                sus = 3.0 + rng.uniform(0, 3)
                if rng.random() < 0.3:
                    events.append(ev(sus - 0.5, o, s, "probe_failed"))
                events.append(ev(sus, o, s, "suspected"))
                events.append(ev(sus + 4 + rng.uniform(0, 1), o, s, "dead"))
                events.append(ev(40 + rng.uniform(0, 5), o, s, "alive", "join"))
            elif o != s and rng.random() < 0.2:  # the odd own-side suspicion at the heal
                events.append(ev(40.5, o, s, "suspected", "pushpull"))
                events.append(ev(40.5 + rng.uniform(0, 0.5), o, s, "alive", "refute"))
    groups = (tuple(range(half)), tuple(range(half, n)))
    actions = [Action(2.0, "partition", "split", groups=groups), Action(32.0, "heal", "heal")]
    return Trace(
        mode="sim", t0=0.0, end=64.0, initial=tuple(range(n)), events=events, actions=actions
    )


def test_thirty_nodes_with_a_partition_fit_a_reasonable_height() -> None:
    page = render_report(one_run(nodes=30), partition_trace())
    svg = svg_of(page, "timeline")
    assert height(svg) < 1500
    assert en("partition 0~14 | 15~29") in svg
    assert en("<title>15~29</title>15~29</text>") in svg  # a row labelled by its subjects' range
    assert re.search(en(r"<title>node 0 see 15~29 \(15 views\): [^<]*dead from"), svg)


def test_a_big_cluster_folds_to_a_row_per_subject() -> None:
    svg = svg_of(render_report(one_run(nodes=60), partition_trace(60, seed=2)), "timeline")
    assert height(svg) < 1000
    assert en("observers 0~59 (60): a row per subject") in svg


def test_fault_labels_that_would_overlap_go_on_separate_lines() -> None:
    acts = [
        Action(11.0, "kill", "kill", (2,)),
        Action(11.2, "pause", "p", (3,)),
        Action(11.4, "loss", "l", (0, 1, 2, 3, 4), value=10.6),
    ]
    tr = Trace(
        mode="sim", t0=10.0, end=40.0, initial=tuple(range(5)), events=joined(5, 9.0), actions=acts
    )
    svg = svg_of(render_report(one_run(), tr), "timeline")
    ys = [int(y) for y in re.findall(r"<text x='[\d.]+' y='(\d+)' fill='#", svg)]
    assert len(ys) == 3
    assert len(set(ys)) == 3
    assert "loss 10.6 % on all" in svg
    assert lanes([(0, 50), (60, 90), (20, 40), (100, 120)]) == [0, 0, 1, 0]


# ---- text --------------------------------------------------------------------------------------


def test_action_text_is_readable() -> None:
    assert action_text({"kind": "partition", "groups": [[0, 1], [2, 3, 4]]}) == (
        en("partition 0, 1 | 2~4")
    )
    long = {"kind": "partition", "groups": [list(range(15)), list(range(15, 30))]}
    assert action_text(long) == en("partition 0~14 | 15~29")
    loss = {"kind": "loss", "nodes": [0, 1, 2, 3, 4], "value": 10.6}
    assert action_text(loss, cluster=5) == "loss 10.6 % on all"
    assert action_text({**loss, "nodes": (0, 1)}) == "loss 10.6 % on 0, 1"
    assert action_text({"kind": "delay", "nodes": [3], "value": 200.0}) == "delay 200 ms on 3"
    assert action_text({"kind": "kill", "nodes": [2]}) == "kill 2"
    assert action_text({"kind": "heal"}) == "heal"
    assert id_ranges([9, 0, 1, 2, 5, 7, 8]) == en("0~2, 5, 7~9")
    assert id_ranges([3, 4]) == "3, 4"


def test_single_run_page_units_bounds_and_suspicions() -> None:
    page = render_report(one_run(), None)
    assert en("partition 0, 1 | 2~4") in page
    assert "loss 10.6 % on all" in page
    assert "delay 200 ms on 0, 1" in page
    assert "12.4 s (derived, 99.9 %)</abbr>" in page
    assert "D1 + T + Min + spread; first probe 6.75 s; suspicion (Min) 4.43 s" in page
    assert "<td>3.60 s</td>" in page  # measured, with the expectation's unit
    assert "<td>0 events</td>" in page
    assert "<td>25 s</td>" in page  # a bound from the file
    assert "<th>at (s)</th>" in page
    assert "false suspicions <b>1 event</b>" in page
    assert "expected deaths <b>0 events</b>" in page
    assert "<h3>False</h3>" in page
    assert "<h3>Expected</h3>" in page
    assert "<td>killed</td>" in page  # the reason of an expected one
    assert "Timeline" not in page
    many = one_run()
    many["false_suspicions"] = {"count": 300, "events": [{"observer": 0, "subject": 1}] * 200}
    assert "<h3>False (20 of 300 listed)</h3>" in render_report(many, None)


def test_missing_optional_keys_are_tolerated() -> None:
    bare = {
        "scenario": "s",
        "verdict": "fail",
        "expectations": [{"description": "x", "status": "fail", "bound": [5, 6]}],
    }
    page = render_report(bare, None)
    assert en("5~6 s") in page
    assert "false suspicions <b>—</b>" in page
    assert render_runs({"scenario": "s"}, None, None).endswith("</html>\n")


def test_hostile_text_is_escaped() -> None:
    run = one_run(scenario=HOSTILE, description=HOSTILE, error=HOSTILE)
    run["expectations"][0]["description"] = HOSTILE
    run["suspicions"]["events"][0]["reason"] = HOSTILE
    page = render_report(run, None)
    many = render_runs(
        {
            **many_runs(3, "real"),
            "scenario": HOSTILE,
            "runs": [{"seed": 1, "verdict": "fail", "failed": [HOSTILE], "out": "run-000"}],
        },
        None,
        None,
    )
    for p in (page, many):
        assert "<script" not in p
        assert "&lt;script&gt;" in p


# ---- many runs -------------------------------------------------------------------------------


def pct(values: list[float | None], unit: str = "s") -> dict[str, Any]:
    done = sorted(v for v in values if v is not None)
    top = done[-1] if done and len(done) == len(values) else None
    return {
        "n": len(values),
        "missing": len(values) - len(done),
        "unit": unit,
        "p50": done[len(done) // 2] if done else None,
        "p90": top,
        "p99": top,
        "max": top,
        "values": values,
    }


def many_runs(k: int, mode: str = "sim", seed: int = 7) -> dict[str, Any]:
    """A many-runs results dict (issue 13's schema): run 2 fails, run 4 errs, some never."""
    rng = random.Random(seed)
    verdicts = ["fail" if i == 2 else "error" if i == 4 else "pass" for i in range(k)]
    dead = [None if i == 2 else round(3 + rng.random() * 4, 3) for i in range(k)]
    runs = [{"seed": 100 + i, "verdict": v, "error": "boom" if v == "error" else None,
             "duration": 16.9, "failed": ["node 2 seen dead"] if v == "fail" else [],
             "out": f"run-{i:03d}" if mode == "real" else None}
            for i, v in enumerate(verdicts)]  # fmt: skip
    passed = verdicts.count("pass")
    exp = expectation("dead", "node 2 seen dead by all within 12.4 s after kill", 12.4,
                      bound_source="derived", bound_detail=DERIVED, passed=passed,
                      applicable=k - 1, pass_rate=passed / (k - 1), measured=pct(dead))  # fmt: skip
    detection = {"step": "kill", "kind": "kill", "subject": 2, "first_dead": pct(dead),
                 "first_suspect": pct([None if d is None else d / 3 for d in dead]),
                 "full_dead": pct(dead)}  # fmt: skip
    aggregate = {"runs": k, "passed": passed, "failed": 1, "errors": 1, "pass_rate": passed / k,
                 "expectations": [exp], "detection": [detection],
                 "convergence": [{"step": "launch", "seconds": pct([0.5] * k)}],
                 "false_suspicions": pct([0] * k, "events"),
                 "expected_suspicions": pct([4] * k, "events")}  # fmt: skip
    return {"scenario": "kill one", "description": "SIGKILL node 2", "source": "kill_one.yaml",
            "mode": mode, "nodes": 5, "runs_requested": k, "seeds": [100, 100 + k - 1],
            "pass_rate_required": 0.9, "verdict": "fail", "aggregate": aggregate,
            "runs": runs}  # fmt: skip


@pytest.mark.parametrize("k", [2, 5, 1000])
def test_strip_has_one_cell_per_run(k: int) -> None:
    page = render_runs(many_runs(k), None, None)
    cells = re.findall(r"<rect class='cell (\w+)'", svg_of(page, "strip"))
    assert len(cells) == k
    assert cells[:5] == ["pass", "pass", "fail", "pass", "error"][:k]
    if k > 2:
        assert "<title>seed 102: fail (node 2 seen dead)</title>" in page
    assert "<title>seed 100: pass</title>" in page
    assert "href=" not in page  # sim runs have no pages of their own
    assert svg_of(page, "cdf")


def test_real_runs_link_to_their_own_report() -> None:
    results = many_runs(6, "real")
    results["runs"][5]["out"] = "../../etc"  # not a run directory: no link
    page = render_runs(results, None, None)
    links = re.findall(r"<a href='([^']*)'>", page)
    assert links == [f"run-{i:03d}/report.html" for i in range(5)]


def test_many_runs_page_shows_rates_percentiles_and_never() -> None:
    page = render_runs(many_runs(10), None, None)
    assert "passed <b>8/10</b> (80 %) · required <b>90 %</b>" in page
    assert en("seeds <b>100~109</b>") in page
    assert "8/9 (88.89 %)" in page
    assert "12.4 s (derived, 99.9 %)" in page
    assert "first dead (n=10, never 1)" in page  # the run where it never happened
    assert "<td>never</td>" in page  # its max
    assert "bound 12.4 s" in svg_of(page, "cdf")  # the bound on the detection chart
    assert "H" in svg_of(page, "cdf")
    assert "false suspicions" in page
    assert "<td>4 events</td>" in page
    assert "Runs that did not pass" in page


def test_many_runs_page_shows_the_chosen_run() -> None:
    page = render_runs(many_runs(3), partition_trace(6), 102)
    assert "Timeline of seed 102" in page
    assert svg_of(page, "timeline")
