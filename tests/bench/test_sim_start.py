"""bench.sim.start: a mass start in the simulator, one node after another or in waves."""

from __future__ import annotations

from bench.sim.start import run, sizes_seen


def test_waves_cost_the_cluster_fewer_packets_than_one_node_after_another() -> None:
    alone = run(40, rate=20.0, wave=1)
    waves = run(40, rate=20.0, wave=10)
    assert alone["converged"]
    assert waves["converged"]
    assert waves["packets"] < alone["packets"]
    assert waves["suspicions"] == alone["suspicions"] == 0


def test_sizes_are_counted_once_per_instant() -> None:
    events = [
        {"observer": 0, "subject": s, "new": "alive", "mono": t}
        for s, t in [(1, 1.0), (2, 1.0), (3, 2.0)]
    ]
    events.append({"observer": 0, "subject": 0, "new": "alive", "mono": 3.0})  # a refutation
    assert sizes_seen(events) == {0: 3}  # 1, then 3 (two at once), then 4
