"""rt_cluster explore: draws are pure and well-formed, the unmutated protocol passes a search, a
planted bug is found, shrunk, written and replayed with the same event digest, a user's
property is code only when the command line names it, and bad usage exits 2."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from bench.explore.plants import planted
from scenarios import History, Verdict, load_scenario, run_scenario
from scenarios.explore import (
    BUILT_IN,
    Options,
    Search,
    draw,
    load_property,
    play,
    run_search,
    shrink,
)
from scenarios.explore.drawing import finish
from scenarios.explore.playing import scenario_of
from scenarios.format.records import TRUSTED
from scenarios.format.spec import ScenarioError
from scenarios.judge import properties
from scenarios.judge.properties import STORAGE_PROPERTIES
from scenarios.play.sim import run_sim
from scenarios.reporting.aggregate import run_line
from tests.support.clusters import run_main

RT_CLUSTER = [sys.executable, "-m", "scenarios.command"]


def test_a_draw_is_a_pure_function_of_its_seed_and_always_a_scenario() -> None:
    for seed in range(300):
        m = draw(seed, Options(3, 5))
        assert m == draw(seed, Options(3, 5))
        assert 3 <= m["nodes"] <= 5
        assert m["steps"][-1] == {"at": m["steps"][-1]["at"], "heal": True, "name": "final"}
        sc = scenario_of(m)
        assert sc.duration > m["steps"][-1]["at"] + 10
    kinds = {k for s in range(300) for st in draw(s, Options())["steps"] for k in st}
    assert {"kill", "pause", "restart", "add", "partition", "loss", "delay", "heal"} <= kinds
    assert {"cut", "clock"} <= kinds


FOUND = sorted((Path(__file__).parent / "found").glob("failure-*.yaml"))


@pytest.mark.parametrize("path", FOUND, ids=[p.stem for p in FOUND])
def test_what_the_search_found_on_the_real_protocol_stays_fixed(path: Path) -> None:
    """Its property holds; a storage file's array also ends healthy, forwards bounded."""
    sc = load_scenario(path, sim=True)
    trace = run_sim(sc)
    judged = properties.judged(sc, trace)
    assert judged is not None
    assert judged["status"] == "pass", judged["detail"]
    if sc.storage is not None:
        assert properties.check(properties.Run(sc, trace), list(STORAGE_PROPERTIES)) is None


def test_swim_ranges_are_drawn_within_bounds() -> None:
    for seed in range(50):
        m = draw(seed, Options(3, 3, {"probe_interval": (0.5, 2.0), "suspicion_mult": (3, 6)}))
        assert 0.5 <= m["swim"]["probe_interval"] <= 2.0
        assert m["swim"]["suspicion_mult"] in range(3, 7)


def _search_seed() -> int:
    """A fresh search seed each run (``RT_EXPLORE_SEED`` replays one), printed."""
    given = os.environ.get("RT_EXPLORE_SEED")
    seed = int(given) if given else secrets.randbelow(1_000_000)
    print(f"search seed {seed} (replay: RT_EXPLORE_SEED={seed} pytest {__file__})")
    return seed


def test_the_unmutated_protocol_passes_a_search(tmp_path: Path) -> None:
    """A different part of the fault space each run, sizes 3-7: a failure names its seed and
    its shrunk file, which joins ``found/`` with its story once fixed."""
    seed = _search_seed()
    lines: list[str] = []
    search = Search(Options(3, 7), budget_s=None, runs=200, seed=seed, out=tmp_path)
    status = run_search(search, say=lines.append)
    assert status == 0, (f"search seed {seed}", [ln for ln in lines if "violated" in ln])
    assert "no property violated" in lines
    assert not list(tmp_path.glob("failure-*"))


@pytest.mark.python_swim
def test_a_planted_bug_is_found_shrunk_written_and_replayed(tmp_path: Path) -> None:
    lines: list[str] = []
    with planted("no_expiry"):
        status = run_search(Search(runs=40, seed=1, out=tmp_path), say=lines.append)
        assert status == 1, lines
        files = sorted(tmp_path.glob("failure-*.yaml"))
        assert files
        data = yaml.safe_load(files[0].read_text())
        assert data["property"] == "completeness"
        assert len(data["steps"]) <= 5
        assert "1-minimal" in next(line for line in lines if line.startswith("failure-"))
        assert (files[0].with_suffix("") / "report.html").is_file()
        digests = []
        for _ in range(2):
            results, _ = run_scenario(load_scenario(files[0], sim=True), sim=True)
            assert results["verdict"] == "fail"
            assert results["property"]["status"] == "fail"
            digests.append(results["events_digest"])
        assert digests[0] == digests[1]
    results, _ = run_scenario(load_scenario(files[0], sim=True), sim=True)  # the bug removed
    assert results["property"]["status"] == "pass"


@pytest.mark.python_swim
def test_a_machine_that_raises_is_a_failure_with_its_report(tmp_path: Path) -> None:
    lines: list[str] = []
    with planted("crash_on_confirm"):
        assert run_search(Search(runs=10, seed=1, out=tmp_path), say=lines.append) == 1
    (file,) = tmp_path.glob("failure-*.yaml")
    assert yaml.safe_load(file.read_text())["property"] == "no_exception"
    results = yaml.safe_load((file.with_suffix("") / "results.json").read_text())
    assert results["verdict"] == "fail"
    assert "KeyError: 'confirmer" in results["property"]["detail"]
    assert "(swim/membership.py:" in results["property"]["detail"]  # where in swim it came from
    assert (file.with_suffix("") / "report.html").is_file()


@pytest.mark.python_swim
def test_two_jobs_find_what_one_job_finds(tmp_path: Path) -> None:
    found = []
    for jobs in (1, 2):
        with planted("lower_alive"):
            run_search(Search(runs=60, seed=4, jobs=jobs, out=tmp_path / str(jobs)), say=print)
        found.append(sorted(p.name for p in (tmp_path / str(jobs)).glob("failure-*.yaml")))
    assert found[0]
    assert found[0] == found[1]


PROPS = """
from scenarios import Verdict


def at_most_one_kill(h):
    kills = [a for a in h.trace.actions if a.kind == "kill"]
    return Verdict("at most one kill", len(kills) <= 1, float(len(kills)))
"""


def test_a_users_property_is_found_and_replayed_from_the_command_line(tmp_path: Path) -> None:
    (tmp_path / "myprops.py").write_text(PROPS)
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.getcwd()}"}
    prop = "myprops:at_most_one_kill"
    out = tmp_path / "out"
    cmd = [*RT_CLUSTER, "explore", "--runs", "150", "--property", prop, "--out", str(out)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1, done.stdout + done.stderr
    (file,) = out.glob("failure-*.yaml")
    data = yaml.safe_load(file.read_text())
    assert data["property"] == prop
    assert [k for s in data["steps"] for k in s if k in ("kill", "heal")] == [
        "kill",
        "kill",
        "heal",
    ]
    replay = [*RT_CLUSTER, "scenario", str(file), "--sim", "--out", str(tmp_path / "r")]
    refused = subprocess.run(replay, env=env, capture_output=True, text=True, timeout=120)
    assert refused.returncode == 2
    assert f"give --property {prop}" in refused.stderr
    digests = set()
    for _ in range(2):
        again = subprocess.run(
            [*replay, "--property", prop], env=env, capture_output=True, text=True, timeout=120
        )
        assert again.returncode == 1, again.stdout + again.stderr
        assert f"fail           property {prop}" in again.stdout
        digests.add(next(x for x in again.stdout.splitlines() if "events digest" in x))
    assert len(digests) == 1


def test_a_file_alone_never_names_code(tmp_path: Path) -> None:
    m = {**draw(0, Options()), "property": "os:getcwd"}
    assert "os:getcwd" not in TRUSTED
    with pytest.raises(ScenarioError, match="is code: give --property os:getcwd"):
        scenario_of(m)
    with pytest.raises(ScenarioError, match="one of completeness"):
        scenario_of({**m, "property": "nonsense"})
    assert scenario_of({**m, "property": "incarnation"}).explore_property == "incarnation"


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["-n", "1"], "sizes of 2 to 64"),
        (["-n", "5-3"], "low first"),
        (["-n", "x"], "a size N or a range"),
        (["--swim", "probe_interval=3..1"], "LOW <= HIGH"),
        (["--swim", "no_such=1..2"], "unknown swim setting"),
        (["--property", "nonsense"], "one of completeness"),
        (["--property", "no.such.module:f"], "No module named"),
        (["--jobs", "0"], "--jobs"),
    ],
)
def test_bad_usage_exits_2_with_one_line(args: list[str], said: str, tmp_path: Path) -> None:
    code, _, err = run_main("explore", "--runs", "1", "--out", str(tmp_path), *args)
    assert code == 2
    assert said in err
    assert len(err.strip().splitlines()) <= 3  # argparse's usage line, then the one error line


def test_every_built_in_property_has_a_name_and_holds_on_a_quiet_run() -> None:
    from scenarios.explore import play

    quiet = {**draw(0, Options()), "steps": [{"at": 5.0, "heal": True, "name": "final"}]}
    assert play(quiet, list(BUILT_IN)).failed is None


@pytest.mark.python_swim
def test_a_livelock_ends_the_run_as_a_failure_not_a_hang() -> None:
    from scenarios.explore import play

    with planted("busy_expiry"):  # a timer that re-arms itself for now, forever
        got = play(draw(0, Options(faults=("kill",))), list(BUILT_IN))  # a suspicion expires
    assert got.failed is not None
    assert got.failed[0] == "no_exception"
    assert "SimStalled: 200000 events at virtual" in got.failed[1]


def at_most_one_kill(h: History) -> Verdict:
    """A user's property (the docs' example), for the real replay below."""
    kills = [a for a in h.trace.actions if a.kind == "kill"]
    return Verdict("at most one kill", len(kills) <= 1, float(len(kills)))


@pytest.mark.slow
def test_a_failure_file_reproduces_on_real_processes(tmp_path: Path) -> None:
    name = "tests.scenarios.test_explore:at_most_one_kill"
    load_property(name)  # as --property does: the file may now name it
    steps = [{"at": 1.0, "kill": 1}, {"at": 1.5, "kill": 2}, {"at": 2.0, "heal": True}]
    mapping = {"nodes": 4, "seed": 1, "workload": "off", "steps": steps, "duration": 4.0}
    scenario = scenario_of({**mapping, "property": name})
    results, trace = run_scenario(scenario, out=tmp_path)
    assert trace is not None, results["error"]
    assert results["mode"] == "real"
    assert results["verdict"] == "fail"
    assert results["property"] == {
        "name": name,
        "status": "fail",
        "detail": "FAIL: at most one kill (measured 2)",
    }
    assert run_line(0, 1, results).endswith(
        f"failed property {name}: " + results["property"]["detail"]
    )


def always_fails(h: History) -> Verdict:
    """A property no run holds: a shrink keeps every candidate it can play."""
    return Verdict("never", False)


def test_a_shrink_passes_over_a_candidate_the_format_refuses() -> None:
    name = "tests.scenarios.test_explore:always_fails"
    load_property(name)
    steps = [{"at": 2.0, "add": 1}, {"at": 4.0, "restart": 3}, {"at": 6.0, "heal": True}]
    mapping = finish({"nodes": 3, "seed": 1, "workload": "off", "steps": steps})
    mapping["steps"][-1]["name"] = "final"
    first = play(mapping, [name])
    assert first.failed is not None
    small = shrink(mapping, first, [name], float("inf"))  # dropping the add first: refused
    assert small.minimal
    assert [list(s) for s in small.mapping["steps"]] == [["at", "heal", "name"]]
