"""The driver at rest: no task polls, and the loop lag comes from the tick loop's own timer."""

from __future__ import annotations

import random
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio
import trio.lowlevel

from swim import SwimConfig, SwimHandle, open_swim
from swim.testing import serve_tcp_for

LOCAL = SwimConfig()  # rtsim's defaults: 1 s probe interval, 0.1 s gossip interval


class _Steps(trio.abc.Instrument):
    """Counts the task steps trio runs: each is a wake-up of some task."""

    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


@asynccontextmanager
async def two_members(config: SwimConfig) -> AsyncIterator[list[SwimHandle]]:
    """Two converged members on loopback (TCP listeners included), in this trio run."""
    async with trio.open_nursery() as nursery:
        handles: list[SwimHandle] = []

        async def member(i: int, *, task_status: trio.TaskStatus[SwimHandle]) -> None:
            seeds = [("127.0.0.1", handles[0].port)] if handles else []
            for _ in range(20):  # the TCP twin of a free UDP port may be taken: retry
                async with (
                    open_swim(config, node_id=i, host="127.0.0.1", port=0, seeds=seeds,
                              rng=random.Random(i)) as h,
                    trio.open_nursery() as inner,
                ):  # fmt: skip
                    try:
                        await inner.start(serve_tcp_for, h, "127.0.0.1", h.port)
                    except OSError:
                        inner.cancel_scope.cancel()
                        continue
                    task_status.started(h)
                    await trio.sleep_forever()
            raise RuntimeError("no free port pair")

        for i in range(2):
            handles.append(await nursery.start(member, i))
        with trio.fail_after(30):
            for h in handles:
                await h.wait_members(lambda ms: len(ms) == 2)
        yield handles
        nursery.cancel_scope.cancel()


async def test_members_at_rest_wake_only_for_their_protocol() -> None:
    """Two members at rest: probes, acks and their timers, nothing that polls. The old loop-lag
    probe alone woke each member twenty times a second."""
    async with two_members(LOCAL):
        await trio.sleep(1.0)  # the join's gossip drains
        steps = _Steps()
        trio.lowlevel.add_instrument(steps)
        try:
            t0 = trio.current_time()
            await trio.sleep(3.0)
            elapsed = trio.current_time() - t0
        finally:
            trio.lowlevel.remove_instrument(steps)
    per_member_s = steps.count / elapsed / 2
    assert per_member_s < 15, f"{per_member_s:.1f} task steps a second per member at rest"


async def test_a_starved_loop_shows_as_loop_lag() -> None:
    async with two_members(LOCAL) as (h, _):
        await trio.sleep(0.5)
        assert h.statistics().loop_lag_max < 0.5
        time.sleep(1.3)  # noqa: ASYNC251 (starves the loop on purpose: a tick runs late)
        await trio.sleep(0.1)
        stats = h.statistics()
        assert stats.loop_lag_max >= 0.25
        assert stats.loop_lag_max >= stats.loop_lag >= 0.0
