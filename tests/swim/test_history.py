"""The membership history ring (``swim.History``): numbering, paging with a cursor, wraparound
counted as ``dropped``, ``since`` kept past the ring; and the driver feeding it with the same
lines as its event log."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from swim import HISTORY_SIZE, History, HistoryEntry, MemberEvent, MemberState

from .test_swim_driver import cluster, wait_all


def ev(subject: int, new: str = "alive", mono: float = 0.0, old: str | None = None) -> MemberEvent:
    return MemberEvent(mono, 0, subject, old, new, 3, "test")


def record(h: History, n: int, *, wall: float = 100.0, subject: int = 1) -> list[HistoryEntry]:
    return h.record([ev(subject, mono=float(i)) for i in range(n)], wall=wall, mono_offset=0.0)


def test_seq_starts_at_one_and_strictly_increases() -> None:
    h = History()
    assert (h.last_seq, h.first_seq, len(h)) == (0, 1, 0)
    first = record(h, 3)
    second = record(h, 2)
    assert [e.seq for e in first + second] == [1, 2, 3, 4, 5]
    assert (h.last_seq, h.first_seq, len(h)) == (5, 1, 5)
    assert h.capacity == HISTORY_SIZE >= 10_000


def test_entry_carries_wall_and_mono_moved_onto_the_host_clock() -> None:
    h = History()
    (entry,) = h.record([ev(7, "suspected", mono=2.5, old="alive")], wall=1.7e9, mono_offset=100.0)
    assert entry.as_dict() == {
        "seq": 1, "mono": 102.5, "wall": 1.7e9, "observer": 0, "subject": 7, "old": "alive",
        "new": "suspected", "incarnation": 3, "cause": "test",
    }  # fmt: skip
    assert entry.mono == 102.5
    assert entry.log_line() == {k: v for k, v in entry.as_dict().items() if k != "seq"}


def test_page_after_and_limit() -> None:
    h = History()
    record(h, 10)
    page = h.page(0, 4)
    assert [e.seq for e in page.events] == [1, 2, 3, 4]
    assert (page.next, page.dropped) == (4, 0)
    page = h.page(page.next, 4)
    assert [e.seq for e in page.events] == [5, 6, 7, 8]
    page = h.page(page.next, 4)
    assert [e.seq for e in page.events] == [9, 10]
    assert page.next == 10
    empty = h.page(10, 4)
    assert (empty.events, empty.next, empty.dropped) == ((), 10, 0)
    ahead = h.page(50, 4)  # a cursor past the newest entry: nothing, the cursor kept
    assert (ahead.events, ahead.next, ahead.dropped) == ((), 50, 0)
    events, cursor, dropped = h.page()  # unpacks as (events, next, dropped)
    assert (len(events), cursor, dropped) == (10, 10, 0)


def test_wraparound_counts_what_a_stale_cursor_missed() -> None:
    h = History(capacity=5)
    record(h, 12)
    assert (h.first_seq, h.last_seq, len(h)) == (8, 12, 5)
    page = h.page(0, 100)
    assert [e.seq for e in page.events] == [8, 9, 10, 11, 12]
    assert (page.next, page.dropped) == (12, 7)
    page = h.page(3, 2)
    assert [e.seq for e in page.events] == [8, 9]
    assert (page.next, page.dropped) == (9, 4)
    assert h.page(7, 100).dropped == 0
    assert [e.seq for e in h.page(10, 100).events] == [11, 12]


def test_since_is_the_wall_of_the_last_change_and_survives_the_ring() -> None:
    h = History(capacity=2)
    assert h.since(1) is None
    h.record([ev(1)], wall=10.0)
    h.record([ev(2)], wall=20.0)
    h.record([ev(2, "suspected")], wall=30.0)
    h.record([ev(3)], wall=40.0)  # subject 1's only entry has left the ring
    assert (h.since(1), h.since(2), h.since(3), h.since(4)) == (10.0, 30.0, 40.0, None)


@pytest.mark.parametrize(("after", "limit"), [(-1, 10), (0, 0), (0, -5)])
def test_bad_cursor_or_limit_is_a_value_error(after: int, limit: int) -> None:
    with pytest.raises(ValueError, match=r"^(after|limit) must be"):
        History().page(after, limit)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError, match="capacity"):
        History(capacity=0)


@settings(max_examples=200, deadline=None)
@given(
    capacity=st.integers(1, 12),
    batches=st.lists(st.integers(0, 7), max_size=8),
    after=st.integers(0, 60),
    limit=st.integers(1, 15),
)
def test_pages_match_a_plain_list(
    capacity: int, batches: list[int], after: int, limit: int
) -> None:
    """Against a model: every event numbered in order, the newest ``capacity`` kept."""
    h = History(capacity)
    total = 0
    for n in batches:
        record(h, n)
        total += n
    kept = list(range(max(1, total - capacity + 1), total + 1))
    page = h.page(after, limit)
    want = [s for s in kept if s > after][:limit]
    assert [e.seq for e in page.events] == want
    assert page.next == (want[-1] if want else after)
    assert page.dropped == max(0, (kept[0] if kept else total + 1) - 1 - after)
    seqs = [e.seq for e in page.events]
    assert all(b == a + 1 for a, b in itertools.pairwise(seqs))


async def test_driver_records_every_change_as_its_event_log_does(tmp_path: Path) -> None:
    """Two members on loopback: each handle's history holds the joins, numbered from 1, and
    its event log has the same lines (same ``mono`` and ``wall``), without ``seq``."""
    async with cluster(2, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 2 and all(m.state == "alive" for m in ms))
        page = hs[0].events(0, 5000)
        assert page.dropped == 0
        assert [e.seq for e in page.events] == list(range(1, len(page.events) + 1))
        assert page.next == len(page.events)
        assert any(e.event.subject == 1 and e.event.new == MemberState.ALIVE for e in page.events)
        assert hs[0].since(1) == max(e.wall for e in page.events if e.event.subject == 1)
        assert hs[0].since(99) is None
        assert hs[0].events(page.next, 10).events == ()
        logged = [
            json.loads(line) for line in (tmp_path / "events-0.jsonl").read_text().splitlines()
        ]
        assert logged[: len(page.events)] == [e.log_line() for e in page.events]
