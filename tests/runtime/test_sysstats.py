"""The system-stats ring: ids from 0, inclusive min_event_id, 1024 entries kept; a failed
sample (EMFILE) is counted and never raises into the node."""

from __future__ import annotations

import errno
import logging
import os
import resource
from typing import Any

import psutil
import pytest
import trio
import trio.testing

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
    assert entry is not None
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


# -- sampling never raises into the node ------------------------------------------------------


def test_out_of_file_descriptors_keeps_the_last_sample(caplog: pytest.LogCaptureFixture) -> None:
    """About 1,000 idle connections once made ``sample`` raise EMFILE and killed the node."""
    r = ring()
    first = r.sample()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    lowest_free = os.open("/dev/null", os.O_RDONLY)
    os.close(lowest_free)
    resource.setrlimit(resource.RLIMIT_NOFILE, (lowest_free, hard))  # no descriptor left
    try:
        with pytest.raises(OSError, match="Too many open files"):
            open("/proc/self/stat").close()
        with caplog.at_level(logging.DEBUG, logger="cluster.runtime.sysstats"):
            assert r.sample() is first
            assert r.sample() is first
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert r.errors == 2
    assert r.since(0) == [first]
    warnings = [rec for rec in caplog.records if rec.levelno == logging.WARNING]
    assert len(warnings) == 1  # logged once
    assert r.sample()["event_id"] == 1  # sampling resumes with the next id


def test_a_failing_sample_before_any_answers_none(monkeypatch: pytest.MonkeyPatch) -> None:
    r = ring()
    monkeypatch.setattr(psutil, "virtual_memory", _raise(psutil.AccessDenied()))
    assert r.sample() is None
    assert r.errors == 1
    assert r.latest() is None


def _raise(exc: BaseException) -> Any:
    def fail(*args: Any) -> Any:
        raise exc

    return fail


async def test_serve_sampling_survives_every_error(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock
) -> None:
    r = ring()
    r.sample()
    monkeypatch.setattr(psutil, "virtual_memory", _raise(OSError(errno.EMFILE, "Too many")))
    monkeypatch.setattr(r, "_identity", _raise(RuntimeError("a bug")))
    with trio.move_on_after(10.5):
        await r.serve_sampling(1.0)  # raised at the first sample before
    assert r.errors == 11
    monkeypatch.undo()
    with trio.move_on_after(1.5):
        await r.serve_sampling(1.0)
    assert r.next_event_id == 3


def test_a_failed_sample_leaves_the_oldest_entry_whole_when_the_ring_is_full(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next sample's slot is the oldest entry's once the ring is full: a read that fails
    half way must not have written into it."""
    r = ring(size=4)
    for _ in range(4):
        r.sample()
    oldest = r.since(0)[0]
    monkeypatch.setattr(r, "_identity", lambda: {"node_id": "not a number"})
    with pytest.raises(ValueError):
        r.sample()
    assert r.since(0)[0] == oldest
    assert r.next_event_id == 4


async def test_serve_sampling_asks_its_wait_for_a_window_around_each_interval(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Rule 4: with ``wait`` each next sample is asked for by ``interval + slack`` at the
    latest, with ``2 * slack`` of room before it (0.7..1.3 intervals after the last)."""
    r = ring()
    asked: list[tuple[float, float, float]] = []

    async def wait(deadline: float, slack: float) -> None:
        now = trio.current_time()
        asked.append((now, deadline, slack))
        await trio.sleep_until(deadline - slack)  # as if a tick came at the window's start

    with trio.move_on_after(5.0):
        await r.serve_sampling(2.0, wait)
    assert len(asked) >= 3
    for now, deadline, slack in asked:
        assert deadline - now == pytest.approx(2.6)
        assert slack == pytest.approx(1.2)
    assert r.next_event_id == len(asked)
