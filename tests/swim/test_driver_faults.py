"""The trio driver under a one-way cut and under its own clock (``swim.clock``), on real UDP
and TCP sockets in one process."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import trio

from swim import MemberState, SwimHandle
from swim.clock import ProcessClock, process_clock, wall_time
from tests.swim.test_swim_driver import cluster, states, wait_all


def arrived(h: SwimHandle) -> int:
    return h.machine.counters.arrived


def dropped(h: SwimHandle, reason: str) -> int:
    return h.statistics().dropped.get(reason, 0)


async def wait_until(what: str, check: object, timeout: float = 30.0) -> None:
    """Wait (0.05 s looks) until ``check()`` holds; fail naming ``what`` after ``timeout``."""
    assert callable(check)
    with trio.fail_after(timeout):
        while not check():
            await trio.sleep(0.05)
    assert check(), what


async def test_a_cut_drops_what_the_member_sends_and_nothing_it_receives(
    tmp_path: Path,
) -> None:
    async with cluster(2, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 2 and all(m.state == "alive" for m in ms))
        a, b = hs
        a.faults.cut_to([1])
        assert a.faults.is_cut(1)
        assert not b.faults.is_cut(0)
        await wait_until("a's first dropped packet", lambda: dropped(a, "cut_out") >= 3)
        heard_by_b, heard_by_a, cut = arrived(b), arrived(a), dropped(a, "cut_out")
        # b keeps probing a (its pings arrive: a is b's only peer) while a's answers go nowhere
        await wait_until(
            "b's pings to arrive at a, a's packets to b to be dropped",
            lambda: arrived(a) >= heard_by_a + 10 and dropped(a, "cut_out") >= cut + 10,
        )
        assert arrived(b) == heard_by_b  # not one packet of a's reached b
        assert dropped(a, "cut_in") == 0
        assert dropped(b, "cut_out") == 0
        # a push/pull needs both ways: b's (b rejoins through a, its seed, once it has
        # declared a dead) are refused by a, and fail at b
        await wait_until(
            "b's push/pulls refused by a",
            lambda: dropped(a, "tcp_refused") >= 1 and dropped(b, "pushpull_failed") >= 1,
        )
        assert a.faults.as_dict()["cut"] == [1]
        a.heal()
        assert not a.faults.active
        await wait_all(hs, lambda ms: all(m.state is MemberState.ALIVE for m in ms), timeout=60)


async def test_indirect_probes_route_around_a_one_way_cut(tmp_path: Path) -> None:
    async with cluster(4, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 4 and all(m.state == "alive" for m in ms))
        hs[0].faults.cut_to([1])
        before = [h.events().next for h in hs]
        probes = hs[1].machine.counters.probes
        asked = [h.statistics().sent_packets.get("ping_req", 0) for h in hs[:2]]
        # node 1 probes node 0 many times over: direct probes fail (0's acks are cut), the
        # others' indirect probes reach 0 and bring its acks back
        await wait_until(
            "30 probes of node 1 and 30 cut packets of node 0",
            lambda: (
                hs[1].machine.counters.probes >= probes + 30 and dropped(hs[0], "cut_out") >= 30
            ),
            timeout=60,
        )
        # both ends of the cut asked the others to probe for them
        for h, count in zip(hs[:2], asked, strict=True):
            assert h.statistics().sent_packets.get("ping_req", 0) > count
        for h, after in zip(hs, before, strict=True):
            assert all(s is not MemberState.DEAD for s in states(h).values()), states(h)
            news = [e.event.new for e in h.events(after).events]
            assert MemberState.DEAD not in news, news


# ---- the node clock (swim.clock) ----------------------------------------------------------


class FakeTime:
    """``time.monotonic`` and ``time.time`` that move only when told."""

    def __init__(self) -> None:
        self.mono, self.wall = 1000.0, 1_700_000_000.0

    def monotonic(self) -> float:
        return self.mono

    def time(self) -> float:
        return self.wall

    def pass_(self, seconds: float) -> None:
        self.mono += seconds
        self.wall += seconds


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr("swim.clock.time", fake)
    return fake


def test_the_node_clock_runs_at_its_rate_and_never_jumps(fake_time: FakeTime) -> None:
    clock = ProcessClock(offset=-86400.0, rate=2.0)
    t0, w0 = clock.current_time(), clock.wall()
    assert w0 == pytest.approx(fake_time.wall - 86400.0)
    fake_time.pass_(10.0)
    assert clock.current_time() - t0 == pytest.approx(20.0)
    assert clock.wall() - w0 == pytest.approx(20.0)
    assert clock.deadline_to_sleep_time(clock.current_time() + 4.0) == pytest.approx(2.0)
    # a change re-anchors: the time goes on from where it stood, the wall clock jumps
    before = clock.current_time()
    clock.set(3600.0, 0.5)
    assert clock.current_time() == pytest.approx(before)
    assert clock.wall() == pytest.approx(fake_time.wall + 3600.0)
    fake_time.pass_(10.0)
    assert clock.current_time() - before == pytest.approx(5.0)
    # the offset onto the host's monotonic clock follows the pace
    assert clock.host_offset() == pytest.approx(fake_time.mono - clock.current_time())
    # between changes the wall clock keeps one distance to the time (the machine's offset)
    gap = clock.wall() - clock.current_time()
    fake_time.pass_(7.0)
    assert clock.wall() - clock.current_time() == pytest.approx(gap)


@pytest.mark.parametrize(
    ("offset", "rate"),
    [(31_622_401.0, 1.0), (-31_622_401.0, 1.0), (0.0, 0.49), (0.0, 2.01), (float("nan"), 1.0),
     (0.0, float("inf"))],
)  # fmt: skip
def test_the_node_clock_refuses_what_no_clock_does(offset: float, rate: float) -> None:
    clock = ProcessClock()
    with pytest.raises(ValueError, match="clock"):
        clock.set(offset, rate)
    assert (clock.offset, clock.rate) == (0.0, 1.0)  # nothing changed


def test_a_member_under_a_node_clock_stamps_its_own_wall_and_the_hosts_mono(
    tmp_path: Path,
) -> None:
    async def main() -> None:
        assert process_clock() is not None
        assert wall_time() == pytest.approx(time.time() - 86400.0, abs=60)
        async with cluster(2, tmp_path) as hs:
            await wait_all(hs, lambda ms: len(ms) == 2 and all(m.state == "alive" for m in ms))
            entries = hs[0].events().events
            assert entries
            for e in entries:
                assert e.wall == pytest.approx(time.time() - 86400.0, abs=60)
                assert e.mono == pytest.approx(time.monotonic(), abs=60)
            assert hs[0].faults.as_dict()["clock"] == {"offset": -86400.0, "rate": 1.0}
            machine = hs[0].machine
            assert machine.wall_offset == pytest.approx(wall_time() - trio.current_time(), abs=1)
            hs[0].set_clock(0.0, 2.0)
            assert machine.wall_offset == pytest.approx(time.time() - trio.current_time(), abs=1)
            assert hs[0].faults.clock_rate == 2.0
            hs[0].heal()
            assert (hs[0].faults.clock_offset, hs[0].faults.clock_rate) == (0.0, 1.0)

    trio.run(main, clock=ProcessClock(offset=-86400.0))


async def test_an_embedded_member_refuses_a_clock(tmp_path: Path) -> None:
    async with cluster(1, tmp_path) as hs:
        with pytest.raises(ValueError, match="ProcessClock"):
            hs[0].set_clock(10.0, 1.0)
        assert hs[0].faults.clock_offset == 0.0
        hs[0].heal()  # heal needs no ProcessClock
