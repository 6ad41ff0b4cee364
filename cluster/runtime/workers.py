"""Workers: trio tasks that execute the runtime's tasks and keep the reference's counters.

Rules:
1. A task is ``(pool_id, method, size, fn)``. A sync ``fn`` runs on its worker serially; its CPU
   and wall cost are measured and fed to the pool's cost model. An async ``fn`` runs concurrently
   on its worker and is counted *blocked* while it awaits subtasks it submitted itself.
2. Periodic tasks are parked on a worker; a period is ``MIN_PERIOD_S`` (10 ms) to
   ``MAX_PERIOD_S`` (1 h) seconds (``parse_period`` is the one check, used by module
   validation; ``add_periodic`` refuses anything else).
3. When their pool is destroyed they raise ``PoolGone``; from then on they are *retry* tasks
   (the spec: "left retrying against the destroyed pool"), shown in the worker rows, but not
   forever: the n-th retry waits ``min(period * 2**n, RETRY_MAX_DELAY_S)`` seconds, and after
   ``RETRY_LIMIT`` retries the task is removed, with one log line per pool when it starts
   retrying and one when its last task is removed. So a destroyed pool's tasks are gone
   within about ``RETRY_LIMIT * RETRY_MAX_DELAY_S`` (80 s) and cost a few wake-ups on the way.
4. ``snapshot()`` is sync and cheap: the dashboard calls it on every poll.
"""

from __future__ import annotations

import contextvars
import logging
import math
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import outcome
import trio

from cluster.ground.elapsed import cpu_ns, perf_ns
from cluster.ground.errors import PoolGone
from cluster.ground.ids import PoolId
from cluster.ground.parse import float_value

from .costmodel import CostModel

__all__ = [
    "MAX_PERIOD_S",
    "MIN_PERIOD_S",
    "RETRY_LIMIT",
    "RETRY_MAX_DELAY_S",
    "PeriodicTask",
    "PoolGone",
    "WorkerPool",
    "parse_period",
]

log = logging.getLogger(__name__)
T = TypeVar("T")
TaskFn = Callable[[], Any]

MIN_PERIOD_S = 0.01  # seconds: a shorter period is refused (it would keep a worker busy)
MAX_PERIOD_S = 3600.0
RETRY_LIMIT = 8  # retries of a periodic task whose pool is gone, then it is removed
RETRY_MAX_DELAY_S = 10.0  # the backoff between two retries never exceeds this
INLINE_LEARN_EVERY = 4  # an inline task of a method teaches its cost model one time in this many


def parse_period(value: Any, what: str = "period") -> float:
    """A periodic task's period in seconds from a config value (a number, or number text);
    ``ParseError`` (a ValueError) naming the range for anything else."""
    return float_value(value, low=MIN_PERIOD_S, high=MAX_PERIOD_S, what=what)


def _is_pool_gone(exc: BaseException) -> bool:
    """``PoolGone``, or a group of nothing else (raised from a nursery inside the task)."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_is_pool_gone(e) for e in exc.exceptions)
    return isinstance(exc, PoolGone)


@dataclass(slots=True, eq=False)
class _Task:
    pool_id: PoolId
    method: str
    size: float
    fn: TaskFn
    is_async: bool
    predicted_cpu_us: float
    done: trio.Event = field(default_factory=trio.Event)
    result: outcome.Outcome[Any] | None = None
    blocked_s: float = 0.0
    worker: _Worker | None = None


@dataclass(slots=True, eq=False)
class PeriodicTask:
    pool_id: PoolId
    method: str
    period_s: float
    fn: TaskFn
    worker: _Worker
    next_due: float = 0.0
    retrying: bool = False
    retries: int = 0  # runs since the pool was found gone
    runs: int = 0
    cancel_scope: trio.CancelScope = field(default_factory=trio.CancelScope)

    def cancel(self) -> None:
        self.cancel_scope.cancel()
        if self in self.worker.periodic:
            self.worker.periodic.remove(self)


@dataclass(slots=True, eq=False)
class _Worker:
    worker_id: int
    queue: deque[_Task] = field(default_factory=deque)
    wakeup: trio.Event = field(default_factory=trio.Event)
    in_flight: list[_Task] = field(default_factory=list)
    periodic: list[PeriodicTask] = field(default_factory=list)
    running_sync: bool = False
    blocked: int = 0
    processed: int = 0
    idle_iterations: int = 0

    def pending(self) -> int:
        return len(self.queue) + len(self.in_flight)


_current: contextvars.ContextVar[_Task | None] = contextvars.ContextVar("rt_task", default=None)


class WorkerPool:
    """``count`` workers; ``cost_model(pool_id)`` gives the model a finished task teaches."""

    def __init__(self, count: int, cost_model: Callable[[PoolId], CostModel | None]) -> None:
        self._workers = [_Worker(i) for i in range(max(1, count))]
        self._cost_model = cost_model
        self._nursery: trio.Nursery | None = None
        self._retrying: dict[PoolId, int] = {}  # retrying periodic tasks by pool, for the logs
        self._inline_turn = 0  # the worker row the last inline task was counted on

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Run every worker until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            for w in self._workers:
                nursery.start_soon(self._serve_worker, w)
            task_status.started()
            await trio.sleep_forever()

    # -- submitting -------------------------------------------------------------------------

    def _pick(self) -> _Worker:
        return min(self._workers, key=lambda w: (w.pending(), w.worker_id))

    async def run(
        self, pool_id: PoolId, method: str, size: float, fn: Callable[[], T | Awaitable[T]]
    ) -> T:
        """Execute ``fn`` as a task of ``pool_id``'s ``method`` on a worker; return its result."""
        task = self._submit(pool_id, method, size, fn, is_async=_is_async(fn))
        parent = _current.get()
        started = perf_ns() / 1e9
        if parent is not None and parent.worker is not None:
            parent.worker.blocked += 1
        try:
            await task.done.wait()
        finally:
            if parent is not None and parent.worker is not None:
                parent.worker.blocked -= 1
                parent.blocked_s += perf_ns() / 1e9 - started
        assert task.result is not None
        return task.result.unwrap()  # type: ignore[no-any-return]

    def count_inline(
        self,
        pool_id: PoolId,
        method: str,
        size: float,
        wall_us: float,
        cost: CostModel | None = None,
    ) -> None:
        """A task of ``pool_id``'s ``method`` that its caller ran in its own task, in
        ``wall_us`` µs of work that never waited (so its CPU time too): counted on a worker
        row in turn; the first of each method, then one in ``INLINE_LEARN_EVERY``, is taught
        to the cost model as ``run`` teaches it (inline tasks of one method are alike, and a
        lesson costs about as much as the I/O it counts). For work of microseconds, where
        the hop to a worker (all share one thread: no overlap, about 20 µs of scheduling)
        would cost more than the work."""
        self._inline_turn = (self._inline_turn + 1) % len(self._workers)
        self._workers[self._inline_turn].processed += 1
        model = self._cost_model(pool_id) if cost is None else cost  # ``cost``: the caller's own
        if model is None:
            return
        m = model.method(method)
        m.inline += 1
        if m.inline % INLINE_LEARN_EVERY == 1:  # the first one, then one in INLINE_LEARN_EVERY
            m.learn_alike(size, wall_us, model.learning_rate)

    def _submit(
        self, pool_id: PoolId, method: str, size: float, fn: TaskFn, *, is_async: bool
    ) -> _Task:
        model = self._cost_model(pool_id)
        predicted = model.method(method).predict_cpu(size) if model else 0.0
        task = _Task(pool_id, method, size, fn, is_async, predicted)
        w = self._pick()
        task.worker = w
        w.queue.append(task)
        w.wakeup.set()
        return task

    def add_periodic(
        self, pool_id: PoolId, method: str, period_s: float, fn: TaskFn
    ) -> PeriodicTask:
        """Park a periodic task on the least-loaded worker; it first runs one period from now.

        ``period_s`` must pass ``parse_period`` (modules check it when they validate a config).
        """
        if self._nursery is None:
            raise RuntimeError("WorkerPool.serve() is not running")
        period_s = parse_period(period_s)
        w = min(self._workers, key=lambda w: (len(w.periodic), w.worker_id))
        p = PeriodicTask(pool_id, method, period_s, fn, w, next_due=trio.current_time() + period_s)
        w.periodic.append(p)
        self._nursery.start_soon(self._serve_periodic, p)
        return p

    # -- executing --------------------------------------------------------------------------

    async def _serve_worker(self, w: _Worker) -> None:
        async with trio.open_nursery() as nursery:
            while True:
                if not w.queue:
                    w.idle_iterations += 1
                    w.wakeup = trio.Event()
                    await w.wakeup.wait()
                    continue
                task = w.queue.popleft()
                w.in_flight.append(task)
                if task.is_async:
                    nursery.start_soon(self._execute_async, w, task)
                else:
                    self._execute_sync(w, task)
                    await trio.lowlevel.checkpoint()

    def _execute_sync(self, w: _Worker, task: _Task) -> None:
        w.running_sync = True
        cpu0, wall0 = cpu_ns(), perf_ns()
        token = _current.set(task)
        try:
            task.result = outcome.capture(task.fn)
        finally:
            _current.reset(token)
            w.running_sync = False
        cpu_us = (cpu_ns() - cpu0) / 1000
        wall_us = (perf_ns() - wall0) / 1000
        self._finish(w, task, cpu_us, wall_us)

    async def _execute_async(self, w: _Worker, task: _Task) -> None:
        wall0 = perf_ns() / 1e9
        token = _current.set(task)
        try:
            task.result = await outcome.acapture(task.fn)
        finally:
            _current.reset(token)
        wall_us = (perf_ns() / 1e9 - wall0) * 1e6
        self._finish(w, task, max(0.0, wall_us - task.blocked_s * 1e6), wall_us)

    def _finish(self, w: _Worker, task: _Task, cpu_us: float, wall_us: float) -> None:
        w.in_flight.remove(task)
        w.processed += 1
        failed = isinstance(task.result, outcome.Error)
        model = self._cost_model(task.pool_id)
        if model is not None and not failed:
            model.observe(task.method, task.size, cpu_us, wall_us)
        task.done.set()

    async def _serve_periodic(self, p: PeriodicTask) -> None:
        try:
            with p.cancel_scope:
                while p.retries <= RETRY_LIMIT:
                    await trio.sleep_until(p.next_due)
                    await self._run_periodic(p)
                    delay = p.period_s
                    if p.retrying:
                        delay = min(p.period_s * 2**p.retries, RETRY_MAX_DELAY_S)
                        p.retries += 1
                    p.next_due = trio.current_time() + delay
        finally:
            if p in p.worker.periodic:
                p.worker.periodic.remove(p)
            if p.retrying:
                self._retrying[p.pool_id] -= 1
                if not self._retrying[p.pool_id]:
                    del self._retrying[p.pool_id]
                    if p.retries > RETRY_LIMIT:
                        log.warning(
                            "periodic tasks of destroyed pool %s removed after %d retries",
                            p.pool_id,
                            RETRY_LIMIT,
                        )

    async def _run_periodic(self, p: PeriodicTask) -> None:
        try:
            await self.run(p.pool_id, p.method, 0, p.fn)
        except Exception as exc:
            if not _is_pool_gone(exc):
                log.exception("periodic task %s of pool %s failed", p.method, p.pool_id)
            elif not p.retrying:
                p.retrying = True
                if not self._retrying.get(p.pool_id):
                    log.warning(
                        "periodic task %s of pool %s keeps retrying (at most %d times, with "
                        "backoff): the pool was destroyed",
                        p.method,
                        p.pool_id,
                        RETRY_LIMIT,
                    )
                self._retrying[p.pool_id] = self._retrying.get(p.pool_id, 0) + 1
        p.runs += 1

    # -- observing --------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        """The reference's worker rows, one per worker."""
        now = trio.current_time() if self._nursery is not None else 0.0
        rows = []
        for w in self._workers:
            due = [p.next_due for p in w.periodic]
            suspend = max(0.0, min(due) - now) if due else 0.0
            load = sum(t.predicted_cpu_us for t in w.in_flight)
            rows.append(
                {
                    "worker_id": w.worker_id,
                    "is_running": self._nursery is not None,
                    "is_active": bool(w.in_flight) and w.blocked < len(w.in_flight),
                    "idle_iterations": w.idle_iterations,
                    "num_queued_tasks": len(w.queue),
                    "num_blocked_tasks": w.blocked,
                    "num_periodic_tasks": sum(not p.retrying for p in w.periodic),
                    "num_retry_tasks": sum(p.retrying for p in w.periodic),
                    "suspend_period_us": round(suspend * 1e6),
                    "num_tasks_processed": w.processed,
                    "load": load if math.isfinite(load) else None,
                }
            )
        return rows

    def periodic_of(self, pool_id: PoolId) -> list[PeriodicTask]:
        return [p for w in self._workers for p in w.periodic if p.pool_id == pool_id]


def _is_async(fn: Callable[..., Any]) -> bool:
    import inspect

    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004
    )
