"""The library on real node processes at 3-5 nodes (each run well under 40 s), two scenarios at
a time: each run is mostly waiting on the protocol's own timers, so two clusters side by side
halve the wall time (every bound holds with a loop-lag allowance; the loaded test shows that
a busy neighbour breaks none)."""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from scenarios import library, load_scenario, run_scenario, write_outputs

pytestmark = pytest.mark.slow
# A file with Serf agents runs once, in test_mixed.py (it needs Debian's serf on PATH).
LIBRARY = {p.stem: p for p in library() if not load_scenario(p).serf}
AT_ONCE = 2  # scenarios run side by side
Run = tuple[dict[str, Any], Any, Path]


def _kill_leftovers(out: Path) -> None:
    rec = out / "cluster" / "cluster.json"
    if rec.is_file():
        for n in json.loads(rec.read_text()).get("nodes", []):
            if n.get("pid"):
                try:
                    os.killpg(int(n["pid"]), signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def _run(name: str, out: Path) -> Run:
    """One scenario on its own throwaway cluster under ``out``, in a thread of its own (its own
    trio run); every process it started is ended whatever happens."""
    try:
        results, trace = run_scenario(load_scenario(LIBRARY[name]), out=out)
        write_outputs(out, results, trace)
    finally:
        _kill_leftovers(out)
    return results, trace, out


@pytest.fixture(scope="module")
def runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[Run]]]:
    """Every scenario this session selected from this module, started ``AT_ONCE`` at a time,
    in the order collected; a test waits for its own."""
    names = [
        item.callspec.params["name"]
        for item in request.session.items
        if item.module is request.module and hasattr(item, "callspec")
    ]
    pool = ThreadPoolExecutor(max_workers=AT_ONCE, thread_name_prefix="scenario")
    try:
        yield {n: pool.submit(_run, n, tmp_path_factory.mktemp(n)) for n in names}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.parametrize("name", sorted(LIBRARY))
def test_library_scenario_passes_on_processes(name: str, runs: dict[str, Future[Run]]) -> None:
    assert load_scenario(LIBRARY[name]).nodes <= 5
    results, trace, out = runs[name].result(timeout=600)
    assert trace is not None, results["error"]
    failed = [e for e in results["expectations"] if e["status"] == "fail"]
    assert results["verdict"] == "pass", (failed, str(out))
    assert results["mode"] == "real"
    assert results["events"] > 0
    rec = json.loads((out / "cluster" / "cluster.json").read_text())
    assert {n["state"] for n in rec["nodes"]} <= {"stopped", "killed"}
