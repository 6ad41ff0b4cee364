"""The system-stats ring: ids from 0, inclusive min_event_id, 1024 entries kept."""

from __future__ import annotations

from cluster.runtime.sysstats import RING_SIZE, StatsRing

FIELDS = [
    "event_id",
    "timestamp_ns",
    "wall_time_ns",
    "ram_total_bytes",
    "ram_available_bytes",
    "ram_usage_pct",
    "cpu_usage_pct",
    "gpu_count",
    "gpu_usage_pct",
    "hbm_usage_pct",
    "hbm_used_bytes",
    "hbm_total_bytes",
    "hostname",
    "ip_address",
    "node_id",
    "is_leader",
]


def ring(size: int = RING_SIZE) -> StatsRing:
    return StatsRing(lambda: {"node_id": 3, "ip_address": "127.0.0.1", "is_leader": True}, size)


def test_entries_have_the_reference_fields_in_order() -> None:
    entry = ring().sample()
    assert list(entry) == FIELDS
    assert entry["event_id"] == 0
    assert entry["node_id"] == 3
    assert 0 < entry["ram_available_bytes"] <= entry["ram_total_bytes"]
    assert 0.0 <= entry["cpu_usage_pct"] <= 100.0


def test_min_event_id_is_inclusive() -> None:
    r = ring()
    for _ in range(5):
        r.sample()
    assert [e["event_id"] for e in r.since(3)] == [3, 4]
    assert [e["event_id"] for e in r.since(0)] == [0, 1, 2, 3, 4]
    assert r.since(5) == []


def test_the_ring_keeps_the_newest_entries() -> None:
    r = ring(size=1024)
    for _ in range(1030):
        r.sample()
    entries = r.since(0)
    assert len(entries) == 1024
    assert entries[0]["event_id"] == 6
    assert entries[-1]["event_id"] == 1029
    timestamps = [e["timestamp_ns"] for e in entries]
    assert timestamps == sorted(timestamps)
