"""bench.chaos simtest: its percentiles, and the chaos test it times passes (figures only:
no test here passes or fails on speed)."""

from __future__ import annotations

import trio

from bench.chaos.simtest import one_test, percentiles


def test_percentiles_are_the_median_and_the_ninetieth() -> None:
    got = percentiles([float(x) for x in range(1, 12)])  # 1..11
    assert got == {"median": 6.0, "p90": 10.0, "min": 1.0, "max": 11.0}
    assert percentiles([2.5]) == {"median": 2.5, "p90": 2.5, "min": 2.5, "max": 2.5}


def test_the_timed_test_passes_on_any_seed() -> None:
    for seed in range(5):
        trio.run(one_test, seed)
