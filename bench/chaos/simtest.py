"""The ``simtest`` figure of ``python -m bench.chaos``: what one chaos test in sim costs in one
process, the test a user writes first::

    async with open_cluster(3, mode="sim", seed=seed) as c:
        await c.wait_converged()
        await c.kill(2)
        await c.wait_dead(2)

Each seed's test runs in a trio loop of its own (as pytest-trio gives each test one), one seed
after another in this process; per test, wall and CPU milliseconds (the machine may be
shared: CPU is the steadier figure), median and 90th percentile over the seeds. Goal: a
median of at most 5 ms of wall time. Figures only: nothing passes or fails.
"""

from __future__ import annotations

import statistics
import time
from typing import Any

import trio

from scenarios import open_cluster

__all__ = ["GOAL_SIMTEST_MS", "bench_simtest", "one_test", "percentiles"]

GOAL_SIMTEST_MS = 5.0


async def one_test(seed: int) -> None:
    """The chaos test measured (see the module docstring)."""
    async with open_cluster(3, mode="sim", seed=seed) as c:
        await c.wait_converged()
        await c.kill(2)
        await c.wait_dead(2)


def percentiles(xs: list[float]) -> dict[str, float]:
    """Median, 90th percentile, least and most of ``xs``, rounded to microseconds (in ms)."""
    ranked = sorted(xs)
    p90 = ranked[min(len(ranked) - 1, round(0.9 * (len(ranked) - 1)))]
    return {
        "median": round(statistics.median(ranked), 3),
        "p90": round(p90, 3),
        "min": round(ranked[0], 3),
        "max": round(ranked[-1], 3),
    }


def bench_simtest(seeds: int) -> dict[str, Any]:
    trio.run(one_test, 0)  # the first test pays for what is made once (imports, caches)
    wall, cpu = [], []
    for seed in range(1, seeds + 1):
        w, c = time.perf_counter(), time.process_time()
        trio.run(one_test, seed)
        wall.append((time.perf_counter() - w) * 1000)
        cpu.append((time.process_time() - c) * 1000)
    row: dict[str, Any] = {
        "tests": seeds,
        "test": "open_cluster(3, sim), wait_converged, kill(2), wait_dead(2); a trio loop each",
        "wall_ms": percentiles(wall),
        "cpu_ms": percentiles(cpu),
        "goal_ms": GOAL_SIMTEST_MS,
    }
    row["met"] = row["wall_ms"]["median"] <= GOAL_SIMTEST_MS
    print(
        f"  simtest: {seeds} tests, wall ms median {row['wall_ms']['median']:.2f} "
        f"p90 {row['wall_ms']['p90']:.2f}; CPU ms median {row['cpu_ms']['median']:.2f} "
        f"p90 {row['cpu_ms']['p90']:.2f} (goal: median <= {GOAL_SIMTEST_MS:g} ms)"
    )
    return row
