"""Workers execute tasks, keep the reference's counters and teach the cost model."""

from __future__ import annotations

import logging

import pytest
import trio
import trio.testing

from cluster.ground.errors import PoolGone
from cluster.ground.ids import ADMIN_POOL_ID, PoolId
from cluster.runtime.runtime import Runtime
from cluster.runtime.workers import MIN_PERIOD_S, RETRY_LIMIT, RETRY_MAX_DELAY_S, parse_period
from tests.support import wait_for_async


def totals(rt: Runtime, key: str) -> int:
    return sum(row[key] for row in rt.workers.snapshot())


async def test_sync_task_result_and_processed_count(runtime: Runtime) -> None:
    before = totals(runtime, "num_tasks_processed")
    assert await runtime.workers.run(ADMIN_POOL_ID, "monitor", 1, lambda: 6 * 7) == 42
    assert totals(runtime, "num_tasks_processed") == before + 1
    model = runtime.pools.get(ADMIN_POOL_ID).cost.method("monitor")
    assert model.samples == 1
    assert model.mape > 0  # trained on a real measured cost


async def test_task_exception_reaches_the_caller(runtime: Runtime) -> None:
    def boom() -> None:
        raise ValueError("disk on fire")

    with pytest.raises(ValueError, match="disk on fire"):
        await runtime.workers.run(ADMIN_POOL_ID, "monitor", 0, boom)
    assert await runtime.workers.run(ADMIN_POOL_ID, "monitor", 0, lambda: "still up") == "still up"


async def test_parent_is_blocked_while_its_subtasks_wait(runtime: Runtime) -> None:
    release = trio.Event()
    seen_blocked: list[int] = []

    async def child() -> str:
        await release.wait()
        return "child"

    async def parent() -> str:
        return await runtime.workers.run(ADMIN_POOL_ID, "compose", 0, child)

    async with trio.open_nursery() as nursery:
        nursery.start_soon(runtime.workers.run, ADMIN_POOL_ID, "compose", 0, parent)
        blocked = await wait_for_async(
            "the parent task counted blocked on its waiting subtask",
            lambda: totals(runtime, "num_blocked_tasks"),
            timeout=10,
            interval=0.001,
        )
        seen_blocked.append(blocked)
        release.set()
    assert seen_blocked == [1]
    assert totals(runtime, "num_blocked_tasks") == 0


async def test_queued_tasks_are_counted(runtime: Runtime) -> None:
    import time

    done = 0
    peak = 0

    async def submit() -> None:
        nonlocal done
        await runtime.workers.run(ADMIN_POOL_ID, "monitor", 0, lambda: time.sleep(0.002))
        done += 1

    async with trio.open_nursery() as nursery:
        for _ in range(20):
            nursery.start_soon(submit)
        while done < 20:  # 20 tasks of 2 ms on 4 workers: some must wait in a queue
            peak = max(peak, totals(runtime, "num_queued_tasks"))
            await trio.lowlevel.checkpoint()
    assert peak > 0
    assert totals(runtime, "num_queued_tasks") == 0


async def test_periodic_task_becomes_retry_when_its_pool_is_gone(
    runtime: Runtime, caplog: pytest.LogCaptureFixture, autojump_clock: trio.testing.MockClock
) -> None:
    gone = False
    runs: list[float] = []

    def tick() -> None:
        runs.append(trio.current_time())
        if gone:
            raise PoolGone("7.0")

    # Every sleep below is on trio's MockClock (``autojump_clock``): virtual seconds, which pass
    # only when every task waits; nothing here runs in a thread, so the runs they allow for are
    # exact, however fast the machine is.
    pid = PoolId(7, 0)
    a = runtime.workers.add_periodic(pid, "scrub", 0.25, tick)
    b = runtime.workers.add_periodic(pid, "flush", 0.25, tick)
    await trio.sleep(0.6)
    assert len(runs) == 4
    assert totals(runtime, "num_periodic_tasks") == 2
    assert 0 < totals(runtime, "suspend_period_us") <= 2 * 250_000
    with caplog.at_level(logging.WARNING, logger="cluster.runtime.workers"):
        gone = True
        await trio.sleep(0.26)  # each task runs once more, finds the pool gone: retry tasks
        assert a.retrying
        assert b.retrying
        assert (totals(runtime, "num_retry_tasks"), totals(runtime, "num_periodic_tasks")) == (2, 0)
        first_failure = trio.current_time()
        failing_runs = len(runs)
        # the retries back off: 0.25, 0.5, 1, 2, 4, 8, then 10 s (the cap), then they go
        await trio.sleep(sum(min(0.25 * 2**n, RETRY_MAX_DELAY_S) for n in range(RETRY_LIMIT)))
        await trio.sleep(0.1)
        assert len(runs) == failing_runs + 2 * RETRY_LIMIT
        assert totals(runtime, "num_retry_tasks") == 0, "removed after the last retry"
        assert trio.current_time() - first_failure < RETRY_LIMIT * RETRY_MAX_DELAY_S
        await trio.sleep(60)
        assert len(runs) == failing_runs + 2 * RETRY_LIMIT, "and never run again"
    messages = [r.getMessage() for r in caplog.records]
    assert len([m for m in messages if "keeps retrying" in m]) == 1  # once per pool
    assert len([m for m in messages if "removed after" in m]) == 1
    assert runtime.workers.periodic_of(pid) == []


async def test_periodic_task_can_be_cancelled_while_retrying(runtime: Runtime) -> None:
    def tick() -> None:
        raise PoolGone("7.0")

    task = runtime.workers.add_periodic(PoolId(7, 0), "scrub", 0.01, tick)
    await wait_for_async(
        "the failing scrub task to turn into a retry task", lambda: task.retrying, timeout=10
    )
    task.cancel()
    assert totals(runtime, "num_retry_tasks") == 0


@pytest.mark.parametrize("period", [0, 1e-6, 0.009, -1, float("nan"), float("inf"), 3601, True])
async def test_periods_out_of_range_are_refused(runtime: Runtime, period: float) -> None:
    with pytest.raises(ValueError, match="period"):
        runtime.workers.add_periodic(PoolId(7, 0), "scrub", period, lambda: None)
    assert runtime.workers.periodic_of(PoolId(7, 0)) == []
    assert parse_period(MIN_PERIOD_S) == MIN_PERIOD_S


async def test_worker_rows_have_the_reference_fields(runtime: Runtime) -> None:
    row = runtime.workers.snapshot()[0]
    assert list(row) == [
        "worker_id",
        "is_running",
        "is_active",
        "idle_iterations",
        "num_queued_tasks",
        "num_blocked_tasks",
        "num_periodic_tasks",
        "num_retry_tasks",
        "suspend_period_us",
        "num_tasks_processed",
        "load",
    ]
    assert len(runtime.workers.snapshot()) == runtime.settings.runtime.workers
