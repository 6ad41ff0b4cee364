"""Packets before timeouts (``swim.driver`` rule 11): a tick first takes every datagram
already waiting, so an ack that came while the member's loop was busy ends the probe
instead of failing it; and a loop that runs late is counted (rule 7). A loop that stalls
right after a probe went out is what a loaded machine does to a member; the peer runs in a
process of its own and answers meanwhile."""

from __future__ import annotations

import random
import time

import pytest
import trio

from swim import SwimConfig, SwimHandle, open_swim
from swim.members import MemberState
from tests.support import Harness, wait_for_async
from tests.swim.members import start_member

CONFIG = {"probe_interval": 0.5, "probe_timeout": 0.1}
STALLS = 8


def _stall_after_each_probe(a: SwimHandle, seconds: float, times: int) -> list[bool]:
    """After each tick that sent a probe, the loop does nothing else for ``seconds`` (a busy
    process, as on a loaded machine), ``times`` times; each entry says whether the probe's
    deadline passed during the stall."""
    tick = a._timer._tick
    seen: list[bool] = []

    def stalling(now: float) -> None:
        before = a.machine.prober.probe
        tick(now)
        p = a.machine.prober.probe
        if p is not None and p is not before and len(seen) < times:
            time.sleep(seconds)
            seen.append(p.direct_deadline < trio.current_time())

    a._timer._tick = stalling
    return seen


def _ended(a: SwimHandle) -> bool | None:
    p = a.machine.prober.probe
    return True if p is None or p.done else None


@pytest.mark.slow
async def test_an_ack_that_waited_behind_a_stalled_loop_ends_the_probe(harness: Harness) -> None:
    _, port = await start_member(harness, 1, [], CONFIG)
    config = SwimConfig.from_mapping(CONFIG)
    async with open_swim(
        config,
        node_id=0,
        host="127.0.0.1",
        port=0,
        seeds=[f"127.0.0.1:{port}"],
        rng=random.Random(7),
    ) as a:
        with trio.fail_after(30):
            await a.wait_members(
                lambda ms: len(ms) == 2 and all(m.state is MemberState.ALIVE for m in ms)
            )
        failures = a.statistics().probe_failures
        seen = a.events(0, 10_000).next
        # Past the probe's whole period: its deadline and its end are both due at the tick.
        stalls = _stall_after_each_probe(a, 2 * config.probe_interval, STALLS)
        await wait_for_async("the stalls", lambda: len(stalls) == STALLS or None, timeout=60)
        await wait_for_async("the last probe to end", lambda: _ended(a), timeout=10)
        assert all(stalls)  # every stall ran past its probe's deadline
        assert a.statistics().probe_failures == failures
        changes = [e.event.new for e in a.events(seen, 10_000).events if e.event.subject == 1]
        assert changes == []
        assert a.members()[1].state is MemberState.ALIVE
        assert a.statistics().slow_ticks >= STALLS  # each stall made the next tick late
