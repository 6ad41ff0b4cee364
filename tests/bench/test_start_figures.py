"""bench.cluster's figures of a start (issue 42): false suspicions, and the distinct cluster
sizes each node passed through, read from the nodes' event logs."""

from __future__ import annotations

import json
from pathlib import Path

from bench.cluster.figures import start_figures


def _log(
    path: Path, observer: int, changes: list[tuple[int, str]], at: list[float] | None = None
) -> str:
    at = at or [float(i) for i in range(len(changes))]
    lines = [
        json.dumps({"observer": observer, "subject": s, "new": new, "mono": t})
        for (s, new), t in zip(changes, at, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def test_sizes_count_the_distinct_up_counts_each_node_held(tmp_path: Path) -> None:
    # Node 0 learns 1, 2, 3 one by one (sizes 1, 2, 3, 4), suspects 3 (still up: 4), sees
    # it dead (3) and back (4): four distinct sizes, however often it passes them. Node 1
    # learns 0, 2 and 3 (three events: 2, 3, 4) and refutes a suspicion of itself (no size).
    a = _log(
        tmp_path / "0.jsonl",
        0,
        [(1, "alive"), (2, "alive"), (3, "alive"), (3, "suspected"), (3, "dead"), (3, "alive")],
    )
    b = _log(tmp_path / "1.jsonl", 1, [(0, "alive"), (2, "alive"), (3, "alive"), (1, "alive")])
    got = start_figures([a, b, str(tmp_path / "missing")], live={0, 1, 2})
    assert got["sizes_seen_max"] == 4  # node 0: 1, 2, 3, 4; node 1: 1, 2, 3, 4
    assert got["start_false_suspicions"] == 0  # node 3 was not in the live set
    got = start_figures([a, b], live={0, 1, 2, 3})
    assert got["start_false_suspicions"] == 1
    assert got["sizes_seen_median"] == 4


def test_the_changes_of_one_instant_count_as_one_size(tmp_path: Path) -> None:
    # A push/pull brings 1, 2 and 3 at once (one instant), then 4 comes alone: sizes 1, 4, 5.
    a = _log(
        tmp_path / "0.jsonl",
        0,
        [(1, "alive"), (2, "alive"), (3, "alive"), (4, "alive")],
        at=[5.0, 5.0, 5.0, 6.0],
    )
    assert start_figures([a], live={0})["sizes_seen_max"] == 3


def test_no_logs_no_figures(tmp_path: Path) -> None:
    got = start_figures([str(tmp_path / "none")], live={0})
    assert got == {
        "start_false_suspicions": 0,
        "sizes_seen_max": None,
        "sizes_seen_median": None,
    }
