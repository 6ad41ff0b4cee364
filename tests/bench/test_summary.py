"""bench.summary: one row per goal from the saved figures, written between the README's
markers and nowhere else."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import summary


def test_rows_come_from_the_saved_figures(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary, "RESULTS", tmp_path)
    (tmp_path / "storage.json").write_text(json.dumps({"when": "2026-01-02T03:04:05", "results": [
        {"operation": "array write 1 MiB", "mbps": 300.0, "raw_mbps": 1000.0, "raw": "copy",
         "ratio": 0.3, "goal": "ratio >= 0.3", "goal_met": True},
        {"operation": "array recovery", "mbps": 400.0, "raw_mbps": 1000.0, "raw": "copy",
         "ratio": 0.4, "goal": "mbps >= 500", "goal_met": False},
        {"operation": "no goal here", "mbps": 1.0, "raw_mbps": 1.0, "raw": "copy", "ratio": 1},
    ]}))  # fmt: skip
    text = summary.table()
    assert "| array write 1 MiB | 0.30 | copy 1000 MB/s | ratio >= 0.3 | yes |" in text
    assert "| array recovery | 400 MB/s | copy 1000 MB/s | mbps >= 500 | **no** |" in text
    assert "no goal here" not in text
    assert "| bench.api | not measured |" in text  # no file: said, not guessed
    assert "`bench.storage` 2026-01-02 03:04" in text


def test_the_readme_section_is_replaced_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = tmp_path / "README.md"
    readme.write_text(f"# x\nbefore\n{summary.START}\nold table\n{summary.END}\nafter\n")
    monkeypatch.setattr(summary, "README", readme)
    summary.write_readme("| new |\n")
    assert readme.read_text() == f"# x\nbefore\n{summary.START}\n| new |\n{summary.END}\nafter\n"
    readme.write_text("no markers\n")
    with pytest.raises(SystemExit, match="bench:start"):
        summary.write_readme("| new |\n")
    assert readme.read_text() == "no markers\n"


def test_the_chaos_figures_have_their_rows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(summary, "RESULTS", tmp_path)
    start = {"fixture_s": {"median": 0.85}, "up_s": {"median": 1.33}, "met": True}
    chaos = {
        "when": "2026-11-26T10:00:00",
        "start": [{"mode": "real", **start}, {"mode": "netns", **start, "met": False}],
        "sim": {"tests": 200, "per_test_ms": {"median": 3.4}, "met": True},
        "simtest": {
            "tests": 300,
            "wall_ms": {"median": 6.25, "p90": 9.0},
            "cpu_ms": {"median": 4.0},
            "goal_ms": 5.0,
            "met": False,
        },
        "leftovers": {
            "mode": "real",
            "tests_started": 101,
            "interrupted_sessions": 9,
            "live_in_ledgers": 0,
            "processes_naming_the_folder": 1,
            "namespaces_and_links": 0,
            "met": False,
        },
    }
    (tmp_path / "chaos.json").write_text(json.dumps(chaos))
    text = summary.table()
    assert (
        "| chaos fixture, 3 nodes real: call to converged (s, median) | 0.85 "
        "| rt_cluster up 1.33 beside it | <= 5 s, <= up + 1 s | yes |"
    ) in text
    assert "| rt_cluster up --netns 1.33 beside it | <= 5 s, <= up + 1 s | **no** |" in text
    assert "| chaos fixture, sim: cost per test (ms, median) | 3.4 |" in text
    assert (
        "| chaos test in sim: open 3, converged, kill, dead (ms per test, median) | 6.2 "
        "| p90 9.0, CPU 4.0 (300 seeds) | <= 5 ms | **no** |"
    ) in text
    assert (
        "| left after 101 real chaos tests (failures, -x, SIGINT) | 1 "
        "| 9 sessions SIGINTed | 0 | **no** |"
    ) in text


def test_the_explore_figures_have_their_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(summary, "RESULTS", tmp_path)
    plant = {"found": True, "steps": 3, "shrink_s": 1.5, "replays_same_digest": 10}
    explore = {
        "when": "2026-11-26T11:00:00",
        "speed": {"jobs": 2, "runs_per_s": 42.0, "virtual_x": 4000.0},
        "command": [
            {"jobs": 1, "runs": 400, "runs_per_s": 20.0, "runs_per_cpu_s": 20.5, "met": True},
            {"jobs": 2, "runs": 400, "runs_per_s": 101.0, "runs_per_cpu_s": 52.0, "met": True},
        ],
        "plants": [
            {"plant": "a", "found_after_s": 0.5, **plant},
            {"plant": "b", "found": False},
        ],
        "clean": {"runs": 9000, "seconds": 1800.0, "violations": []},
    }
    (tmp_path / "explore.json").write_text(json.dumps(explore))
    text = summary.table()
    assert (
        "| explore: runs per second, 5 nodes, --jobs 2 | 42.0 | 4000x real time | >= 10 | yes |"
        in text
    )
    assert (
        "| explore, whole command: runs per second, 5 nodes, --jobs 2 | 101.0 "
        "| 52.0 per CPU s, 400 runs | >= 100 | yes |"
    ) in text
    assert "whole command: runs per second, 5 nodes, --jobs 1" not in text  # a figure, no row
    assert (
        "| explore: planted bugs found (within the budget) | 1 of 2 | a 0.5 s, b - s; "
        "with the old fault kinds only: none found, as it should be |"
    ) in text
    assert "| 3 / 1.5 | replays with the same digest: 10 of 10 (fewest) |" in text
    clean = "| explore: violations on the unmutated protocol in 30 min, sizes 3-5 | 0 | 9000 runs, "
    assert f"{clean}0 seeds of the clock () | 0 in 120 min, sizes 3-7 | **no** |" in text
    explore["clean"] = {
        "runs": 250000,
        "seconds": 7200.0,
        "sizes": "3-7",
        "seeds": [272135, 272145, 272155, 272205],
        "violations": [],
    }
    (tmp_path / "explore.json").write_text(json.dumps(explore))
    row = (
        "| explore: violations on the unmutated protocol in 120 min, sizes 3-7 | 0 | 250000 runs, "
        "4 seeds of the clock (272135, 272145, 272155, ...) | 0 in 120 min, sizes 3-7 | yes |"
    )
    assert row in summary.table()


def test_a_thousand_run_that_failed_says_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(summary, "RESULTS", tmp_path)
    error = "only 580 of 1000 nodes were started (562 answering) within 600s"
    (tmp_path / "thousand.json").write_text(json.dumps({"when": "2026-01-02T03:04:05",
        "up": [{"system": "serf", "nodes": 1000, "error": "did not converge in 300 s"}],
        "rest": [{"run": "thousand", "nodes": 1000, "minutes": 10.0, "error": error}],
    }))  # fmt: skip
    text = summary.table()
    assert (
        f"| 1000 real nodes up and converged (s) | failed: {error} | "
        "Serf 1000: did not converge in 300 s | <= 90 s | **no** |"
    ) in text
