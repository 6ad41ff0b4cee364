"""Coverage-guided fuzzing in CI: every target for a few seconds, and the runner's own checks.

A defect found here fails the test with the kept input's path (under
``tests/artifacts/fuzz/<target>/``, with the target's log beside it). Fix the parser, then copy
the input to ``fuzz/crashes/<target>/``: ``test_replay`` replays it from then on. The long run
is ``make fuzz``.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
from pathlib import Path

import pytest

from fuzz import TARGETS, Target
from fuzz.runner import GRACE, Limits, run_many, run_target
from tests.support import Harness

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "tests" / "artifacts" / "fuzz"
SECONDS = 6  # per target; 15 targets two at a time: about 75 s on 2 cores
JOBS = 2
BOUND = math.ceil(len(TARGETS) / JOBS) * (SECONDS + GRACE)  # the runner's own bound


@pytest.mark.timeout(BOUND + 60)
def test_every_target_fuzzes_without_a_defect(harness: Harness, tmp_path: Path) -> None:
    summary = tmp_path / "summary.json"
    argv = [sys.executable, "-m", "fuzz", "all", "--seconds", str(SECONDS)]
    argv += ["--jobs", str(JOBS), "--work", str(tmp_path / "work")]
    argv += ["--crashes", str(ARTIFACTS), "--summary", str(summary)]
    child = harness.start(argv, "fuzz", env={"PYTHONPATH": str(ROOT)})
    status = harness.wait_exit(child, timeout=BOUND)
    assert summary.is_file(), f"the runner wrote no summary:\n{harness.log_text(child)[-3000:]}"
    rows = json.loads(summary.read_text())
    failed = []
    for row in rows:
        if row["status"] != "ok":
            kept = ARTIFACTS / f"{row['name']}.log"
            shutil.copyfile(row["log"], kept)
            inputs = ", ".join(row["saved"]) or "no input kept"
            failed.append(f"{row['name']}: {row['status']}: {inputs} (log {kept})")
    assert not failed, "defects found:\n" + "\n".join(failed)
    assert status == 0, harness.log_text(child)[-3000:]
    assert [r["name"] for r in rows] == list(TARGETS)
    idle = [r["name"] for r in rows if not r["runs"] or r["corpus"] == 0]
    assert not idle, f"targets that ran no input or kept none: {idle}"


def test_the_runner_keeps_every_kind_of_defect(tmp_path: Path) -> None:
    """A crash, a hang and a memory hog, planted: each is found, named, and its input kept."""
    crash, hang, hog = (
        Target(kind, f"planted {kind}", (), module=f"tests.fuzz.planted.{kind}")
        for kind in ("crash", "hang", "hog")
    )
    roots = {"work_root": tmp_path / "work", "crash_root": tmp_path / "crashes"}
    limits = Limits(seconds=20, input_timeout=1, rss_mb=2048)
    outcomes = run_many([crash, hang], limits, jobs=2, **roots)
    # The hog's input may take its time: only its memory is over the limit.
    outcomes.append(run_target(hog, Limits(seconds=20, input_timeout=60, rss_mb=384), **roots))
    crashes = roots["crash_root"]
    found = {o.name: o for o in outcomes}
    assert {k: o.status for k, o in found.items()} == {
        "crash": "crash",
        "hang": "timeout",
        "hog": "oom",
    }, [o.line() for o in outcomes]
    prefixes = {"crash": "crash-", "hang": "timeout-", "hog": "oom-"}
    for kind, o in found.items():
        assert len(o.saved) == 1, o
        assert o.saved[0].parent == crashes / kind
        assert o.saved[0].name.startswith(prefixes[kind]), o.saved
        assert o.seconds < limits.seconds, o  # it stopped at the defect
        assert str(o.saved[0]) in o.line()
