"""Behaviour pinned across a redesign: a move of code changes none of these.

- every library scenario's events digest in sim, at its own seed and two more (and two larger
  joins), which fixes the protocol's whole history event for event;
- forty runs the search draws, played and judged;
- three chaos tests of the Python API in sim, each fault of it once;
- the OpenAPI document and the ``/api/routes`` table of a node with every built-in module
  (tests/dashboard/test_openapi.py holds the same app to them).

The expected values live in ``tests/pinned/`` (how to change them on purpose:
``tests/support/pinned.py``).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from scenarios.explore.drawing import Options, draw
from scenarios.explore.playing import play
from scenarios.format.spec import load_scenario
from scenarios.judge.properties import BUILT_IN
from scenarios.judge.trace import events_digest
from scenarios.play.opening import open_cluster
from scenarios.play.sim import run_sim
from scenarios.runner import library
from tests.support.pinned import check_pinned

SEEDS = (None, 1, 2)  # None: the scenario's own seed
LARGER = (("kill_one", 40), ("late_join", 12))  # (scenario, nodes): joins of more nodes


def sim_digests() -> dict[str, str]:
    found = {}
    for path in library():
        if load_scenario(path).real_only:
            continue  # Serf agents beside the nodes, no simulated variant: nothing to pin in sim
        plays = [(path, seed, None) for seed in SEEDS]
        plays += [(path, None, n) for stem, n in LARGER if path.stem == stem]
        for p, seed, n in plays:
            scenario = load_scenario(p, nodes=n, sim=True)
            key = f"{p.stem}@{scenario.seed if seed is None else seed}/{scenario.nodes}"
            found[key] = events_digest(run_sim(scenario, seed=seed).events)
    return found


def test_every_library_scenario_plays_the_same_history_in_sim() -> None:
    check_pinned("sim_digests", sim_digests())


def test_the_pins_can_fail(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RT_PIN_UPDATE", raising=False)
    (tmp_path / "x.json").write_text('{"a": "1"}')
    check_pinned("x", {"a": "1"}, folder=tmp_path)
    with pytest.raises(AssertionError, match=r"x\.json differs"):
        check_pinned("x", {"a": "2"}, folder=tmp_path)


def explore_digests() -> dict[str, str]:
    """Forty runs the search draws (sizes 3-7), each played and judged as explore does."""
    found = {}
    for seed in range(40):
        outcome = play(draw(seed, Options(low=3, high=7)), list(BUILT_IN))
        found[str(seed)] = f"{outcome.digest} {outcome.failed}"
    return found


def test_the_search_draws_and_plays_the_same_runs() -> None:
    check_pinned("explore_digests", explore_digests())


async def chaos_digests() -> dict[str, str]:
    """The Python API in sim: a test of each of its faults, as a user writes it."""
    found = {}
    for seed in (1, 2, 3):
        async with open_cluster(5, mode="sim", seed=seed) as c:
            await c.wait_converged()
            await c.kill(1)
            await c.wait_dead(1)
            await c.pause(2)
            await c.partition([0, 3], [4])
            await c.sleep(8)
            await c.heal()
            await c.resume(2)
            await c.restart(1)
            await c.loss(10, [0])
            await c.delay(50)
            await c.add()
            await c.wait_converged()
            found[str(seed)] = events_digest(await c.events())
    return found


async def test_the_python_api_plays_the_same_history_in_sim() -> None:
    check_pinned("chaos_digests", await chaos_digests())
