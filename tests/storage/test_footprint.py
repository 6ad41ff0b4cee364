"""A device's present use (``storage.Footprint``): written runs in whole units, merged, and
what part of a range was never written, against a plain set of units."""

from __future__ import annotations

import random

from cluster.storage import Footprint


def test_runs_merge_and_a_rewrite_changes_nothing() -> None:
    f = Footprint(4096)
    f.add(0, 100)  # part of a unit uses all of it
    f.add(8192, 4096)
    assert f.runs == [(0, 4096), (8192, 4096)]
    f.add(4096, 10)  # fills the gap: one run
    assert f.runs == [(0, 12288)]
    f.add(5000, 3000)
    assert (f.runs, f.used) == ([(0, 12288)], 12288)
    assert f.missing(0, 12288) == 0
    assert f.missing(12000, 1000) == 4096  # the second unit it touches is new
    assert f.missing(40960, 1) == 4096
    f.add(0, 0)
    assert f.missing(0, 0) == 0


def test_against_a_set_of_units() -> None:
    rng = random.Random(46)
    unit, units = 512, 64
    for _ in range(200):
        f, written = Footprint(unit), set()
        for _ in range(rng.randrange(1, 12)):
            offset, size = rng.randrange(units * unit), rng.randrange(1, 8 * unit)
            f.add(offset, size)
            written |= set(range(offset // unit, -(-(offset + size) // unit)))
        assert f.used == len(written) * unit
        ends = [o + s for o, s in f.runs]
        assert all(e < o for e, (o, _) in zip(ends, f.runs[1:], strict=False)), "disjoint, apart"
        for _ in range(20):
            offset, size = rng.randrange(units * unit), rng.randrange(1, 8 * unit)
            touched = set(range(offset // unit, -(-(offset + size) // unit)))
            assert f.missing(offset, size) == len(touched - written) * unit
