"""How a search hands its runs out (``scenarios.explore.jobs``) and plays them: batches hold
every run exactly once, a batch is played in one trio loop with the outcomes of one play each,
a violation inside a batch is reported with its run and seed whatever ``--jobs`` says, no run
starts past the budget, and a run is judged from its events once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from scenarios import History, Verdict
from scenarios.explore import BUILT_IN, Options, Search, draw, play, run_search
from scenarios.explore import playing as playing_module
from scenarios.explore.drawing import run_seed
from scenarios.explore.jobs import BATCH, Batch, batches, play_runs
from scenarios.explore.playing import play_batch, scenario_of
from scenarios.explore.shrinking import candidates
from scenarios.format.spec import Scenario, ScenarioError, parse_scenario
from scenarios.judge import properties


@pytest.mark.parametrize(
    ("runs", "jobs"), [(0, 1), (1, 1), (1, 2), (7, 2), (8, 1), (33, 2), (100, 2), (1000, 3)]
)
def test_batches_hold_every_run_exactly_once_in_order(runs: int, jobs: int) -> None:
    work = list(batches(9, Options(), ["completeness"], runs=runs, jobs=jobs))
    assert [k for b in work for k in b.runs] == list(range(runs))
    assert all(1 <= b.count <= BATCH for b in work)
    if runs >= 4 * jobs:  # enough batches that no job idles while another holds the last
        assert len(work) >= 4 * jobs
    if runs:
        assert work[-1].count == 1  # the last batches shrink to one run


def test_a_search_without_a_run_count_hands_out_batches_without_end() -> None:
    work = batches(9, Options(), ["completeness"], runs=None, jobs=2)
    firsts = [next(work).runs for _ in range(50)]
    assert [k for r in firsts for k in r] == list(range(50 * BATCH))


def test_a_batch_plays_as_one_play_each() -> None:
    mappings = [draw(run_seed(5, k), Options(3, 5)) for k in range(6)]
    together = play_batch(mappings, list(BUILT_IN))
    alone = [play(m, list(BUILT_IN)) for m in mappings]
    assert [(o.digest, o.failed, o.virtual_s) for o in together] == [
        (o.digest, o.failed, o.virtual_s) for o in alone
    ]


def test_a_job_starts_no_run_past_the_stop() -> None:
    past = Batch(5, Options(3, 3), ("completeness",), 0, 4, time.monotonic() - 1.0)
    assert play_runs(past) == []
    got = play_runs(Batch(5, Options(3, 3), ("completeness",), 10, 2, None))
    assert [(p.k, p.nodes) for p in got] == [(k, 3) for k in (10, 11)]
    assert got[0].kinds[-1] == "final heal"


def four_nodes(h: History) -> Verdict:
    """Fails every run that starts with four nodes: some runs of a batch fail, others not."""
    return Verdict("not four nodes", len(h.trace.initial) != 4)


FOUR = "tests.scenarios.test_explore_jobs:four_nodes"


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_violation_in_a_batch_is_reported_with_its_run_and_seed(
    jobs: int, tmp_path: Path
) -> None:
    seed, runs = 11, 24
    fours = [k for k in range(runs) if draw(run_seed(seed, k), Options(3, 5))["nodes"] == 4]
    assert fours  # some runs of a batch fail, others pass
    assert fours[0] > 0
    assert len(fours) < runs
    lines: list[str] = []
    search = Search(
        Options(3, 5),
        budget_s=None,
        runs=runs,
        seed=seed,
        jobs=jobs,
        out=tmp_path,
        properties=[FOUR],
    )
    assert run_search(search, say=lines.append) == 1
    said = [ln for ln in lines if " violated (+" in ln]
    assert any(ln.startswith(f"run {fours[0]}: {FOUR} violated") for ln in said)
    assert all(int(ln.split()[1].rstrip(":")) in fours for ln in said)
    assert f"searched {runs} runs" in next(ln for ln in lines if ln.startswith("searched"))
    (file,) = tmp_path.glob("failure-*.yaml")
    assert file.name == f"failure-{fours[0]}.yaml"
    data = yaml.safe_load(file.read_text())
    assert data["seed"] == run_seed(seed, fours[0])
    assert data["property"] == FOUR
    assert f"(run {fours[0]})" in data["description"]


def test_two_jobs_play_the_same_runs_as_one(tmp_path: Path) -> None:
    said = []
    for jobs in (1, 2):
        lines: list[str] = []
        search = Search(
            Options(3, 6), budget_s=None, runs=37, seed=3, jobs=jobs, out=tmp_path / str(jobs)
        )
        run_search(search, say=lines.append)
        said.append([ln for ln in lines if ln.startswith(("drawn:", "no property"))])
        assert "searched 37 runs" in next(ln for ln in lines if ln.startswith("searched"))
    assert said[0] == said[1]


def test_a_budget_ends_a_search_of_endless_batches(tmp_path: Path) -> None:
    """Without a count of runs the batches never end: the budget ends the search (how soon
    after the stop a job ends its batch is ``test_a_job_starts_no_run_past_the_stop``)."""
    lines: list[str] = []
    search = Search(Options(3, 3), budget_s=1.0, seed=1, jobs=2, out=tmp_path)
    assert run_search(search, say=lines.append) == 0
    done = next(ln for ln in lines if ln.startswith("searched"))
    assert int(done.split()[1]) > 0
    assert "no property violated" in lines


def _checked(mapping: dict[str, Any], through_yaml: bool) -> Scenario | str:
    """The scenario of ``mapping``, or the error that refuses it."""
    try:
        if through_yaml:
            return parse_scenario(yaml.safe_dump(mapping, sort_keys=False), "explore", sim=True)
        return scenario_of(mapping)
    except ScenarioError as exc:
        return str(exc)


def test_a_drawn_mapping_checks_as_its_yaml_file_would() -> None:
    """The same scenario, or the same error (a shrink's candidate may drop an ``add``)."""
    refused = 0
    for seed in range(120):
        m = draw(seed, Options(2, 7, {"probe_interval": (0.3, 2.0)}))
        for each in [m, *candidates(m)]:
            direct = _checked(each, through_yaml=False)
            assert direct == _checked(each, through_yaml=True)
            refused += isinstance(direct, str)
    assert refused < 120


def test_a_run_is_judged_from_its_events_once(monkeypatch: pytest.MonkeyPatch) -> None:
    made = []
    real_views = properties.Views  # type: ignore[attr-defined]

    def views(trace: object) -> object:
        made.append(trace)
        return real_views(trace)  # type: ignore[arg-type]

    monkeypatch.setattr(properties, "Views", views)
    got = play(draw(2, Options(4, 4)), list(BUILT_IN))
    assert got.failed is None
    assert len(made) == 1  # completeness and convergence share the views


def test_an_outcome_hashes_its_events_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    hashed = []
    real_digest = playing_module.digest

    def digest(events: list[dict[str, object]]) -> str:
        hashed.append(len(events))
        return real_digest(events)

    monkeypatch.setattr(playing_module, "digest", digest)
    got = play(draw(2, Options(3, 3)), ["no_exception"])
    assert hashed == []
    assert got.digest == got.digest == real_digest(got.run.trace.events if got.run.trace else [])
    assert len(hashed) == 1
