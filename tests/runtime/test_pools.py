"""The pool table's taken-majors index agrees with a plain set, whatever the changes."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from cluster.runtime.pools import MajorRuns

CHANGES = st.lists(st.tuples(st.booleans(), st.integers(0, 40)), max_size=200)


@given(changes=CHANGES, probes=st.lists(st.integers(0, 45), min_size=1, max_size=10))
def test_next_free_matches_a_set(changes: list[tuple[bool, int]], probes: list[int]) -> None:
    runs, model = MajorRuns(), set[int]()
    for add, x in changes:
        if add:
            runs.add(x)
            model.add(x)
        else:
            runs.discard(x)
            model.discard(x)
        assert len(runs) <= len(model)
    for x in probes:
        assert (x in runs) == (x in model)
        expected = x
        while expected in model:
            expected += 1
        assert runs.next_free(x) == expected
