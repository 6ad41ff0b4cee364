"""The driver at rest: no task polls, and the loop lag comes from the tick loop's own timer.

Both tests run the real driver (``open_swim``: its receive, send and tick tasks) in virtual
time: a ``MockClock`` that autojumps, over an in-memory UDP network (``tests.support.memudp``)
where a datagram is delivered when ``sendto`` returns. Time moves only when every task waits
and nothing is in flight, so what is counted per virtual second is the same on an idle machine
and on a busy one. The wall-clock figure (task steps a second on real loopback sockets) is a
benchmark: ``python -m bench.idle.wakeups``.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
import trio
import trio.lowlevel
import trio.testing

from swim import SwimConfig, SwimHandle, open_swim
from swim.members import MemberState
from tests.support import wait_for_async
from tests.support.memudp import MemoryNet, memory_udp

LOCAL = SwimConfig()  # rtsim's defaults: 1 s probe interval, 0.1 s gossip interval
REST = 60.0  # virtual seconds at rest that are counted (four push/pull periods)
# Each member's own protocol at rest, a second: one probe (its tick, a ping out, the ack in)
# and the other's probe of it (a ping in, the ack out), a few task steps each. The old
# loop-lag probe alone woke each member twenty times a second.
MOST_STEPS_PER_MEMBER_S = 15


class _Steps(trio.abc.Instrument):
    """Counts the task steps trio runs: each is a wake-up of some task; and when the
    driver's tick loop ran."""

    def __init__(self) -> None:
        self.count = 0
        self.ticks: list[float] = []

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1
        if task.name.endswith("MemberTimer.serve"):
            self.ticks.append(trio.current_time())


@asynccontextmanager
async def two_members(config: SwimConfig) -> AsyncIterator[tuple[MemoryNet, list[SwimHandle]]]:
    """Two members on an in-memory network, each knowing the other (the machine's ``preload``:
    there is no TCP here, so no join, and each periodic push/pull fails and is counted as a
    drop, as against a peer that does not answer), both seeing both alive."""
    with memory_udp() as net:
        async with (
            open_swim(config, node_id=0, host="127.0.0.1", port=0, rng=random.Random(0)) as a,
            open_swim(config, node_id=1, host="127.0.0.1", port=0, rng=random.Random(1)) as b,
        ):
            a.machine.preload(b.machine.local_state())
            b.machine.preload(a.machine.local_state())
            for h in (a, b):
                with trio.fail_after(60):  # virtual seconds
                    await h.wait_members(
                        lambda ms: len(ms) == 2 and all(m.state is MemberState.ALIVE for m in ms)
                    )
            yield net, [a, b]


def _gossip_queued(handles: list[SwimHandle]) -> int:
    return sum(len(h.machine.outbox.queue) for h in handles)


async def test_members_at_rest_wake_only_for_their_protocol(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Two members at rest: probes, acks and their timers, nothing that polls."""
    async with two_members(LOCAL) as (net, handles):
        await wait_for_async(
            "the join's gossip to drain", lambda: _gossip_queued(handles), until=lambda n: n == 0
        )
        before = [h.statistics() for h in handles]
        steps = _Steps()
        trio.lowlevel.add_instrument(steps)
        try:
            t0 = trio.current_time()
            await trio.sleep(REST)  # the window measured, in virtual time
            elapsed = trio.current_time() - t0
        finally:
            trio.lowlevel.remove_instrument(steps)
        after = [h.statistics() for h in handles]
    assert elapsed == pytest.approx(REST)  # virtual time: to the instant
    for b, a in zip(before, after, strict=True):  # at rest: probed and acked, never suspected
        assert a.probes - b.probes >= REST - 2, (b, a)
        assert (a.probe_failures, a.suspicions) == (b.probe_failures, b.suspicions)
    assert net.undeliverable == 0
    per_member_s = steps.count / elapsed / 2
    assert per_member_s < MOST_STEPS_PER_MEMBER_S, (
        f"{per_member_s:.1f} task steps a second per member at rest"
    )
    # The timer loop wakes for each probe (a second apart), not again at the probe's
    # timeout once the ack is in (driver rule 5): its wake-ups and the other timers
    # (push/pull a few times a minute) stay well under two a second.
    ticks = len(steps.ticks) / elapsed / 2
    assert 1.0 <= ticks < 1.3, f"{ticks:.2f} timer-loop wake-ups a second per member at rest"


async def test_a_starved_loop_shows_as_loop_lag(autojump_clock: trio.testing.MockClock) -> None:
    async with two_members(LOCAL) as (_, (h, _)):
        await trio.sleep(5.0)  # virtual: ticks at their deadlines, to the instant
        assert h.statistics().loop_lag_max < 1e-6
        # Starve the loop: 1.3 s pass with no checkpoint, as in a blocking call. The tick
        # loop's deadline is at most 1 s ahead, so it runs at least 0.3 s late.
        autojump_clock.jump(1.3)
        await trio.testing.wait_all_tasks_blocked()
        stats = h.statistics()
        assert stats.loop_lag_max >= 0.3 - 1e-6
        assert stats.loop_lag_max >= stats.loop_lag >= 0.0


async def test_a_periodic_job_rides_on_the_members_ticks(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Driver rule 10: a job due once a second with slack returns with a probe tick, in the
    same instant (one wake-up of the process for both); without a tick in its slack it
    returns at its own deadline."""
    async with two_members(LOCAL) as (_, (h, _)):
        await trio.sleep(5.0)  # the join's gossip has drained: one tick a probe
        steps = _Steps()
        trio.lowlevel.add_instrument(steps)
        rode = []
        try:
            for _ in range(20):
                await h.sleep_near(trio.current_time() + 1.3, 0.6)
                rode.append(trio.current_time())
        finally:
            trio.lowlevel.remove_instrument(steps)
        assert all(t in steps.ticks for t in rode), (rode, steps.ticks)
        gaps = [b - a for a, b in itertools.pairwise(rode)]
        assert all(0.7 <= g <= 1.3 for g in gaps), gaps
        # No tick comes within 0.1 s of now (the last one just ran): the deadline holds.
        t0 = trio.current_time()
        await h.sleep_near(t0 + 0.1, 0.1)
        assert trio.current_time() == pytest.approx(t0 + 0.1)
        assert h._timer._riders == []
