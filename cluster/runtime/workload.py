"""The synthetic workload: tasks on the node's pools at a modest rate, so every statistic moves.

At start, the settings' compose section is composed; when it is empty and ``workload.pools``
is on, each module's ``demo_entries`` are composed instead (a small device, array and target).
Then, ``workload.rate`` times a second, one pool's ``workload_step`` runs (module I/O as
worker tasks), and the admin pool gets a monitor task now and then.

Rules:
1. Whatever the settings say, the workload stays modest (``workload_limits``): the rate is
   at most ``MAX_RATE`` steps a second (``inf`` too), a rate that is not a positive finite
   number means one step a second; ``io_size`` is clamped to ``1..MAX_IO_SIZE`` bytes. A
   clamped value is logged once, at start.
2. A failing step is logged and the workload goes on: it never takes the node down.
"""

from __future__ import annotations

import logging
import math
import random
from collections.abc import Mapping
from typing import Any, Protocol

import trio

from cluster.ground.errors import ApiError
from cluster.ground.ids import ADMIN_POOL_ID
from cluster.ground.settings import Settings

from .module import Module
from .pools import PoolManager

__all__ = [
    "MAX_IO_SIZE",
    "MAX_RATE",
    "WorkloadHost",
    "serve_workload",
    "startup_compose",
    "workload_limits",
]

log = logging.getLogger(__name__)

MAX_RATE = 1000.0  # workload steps per second
MAX_IO_SIZE = 1 << 20  # bytes per synthetic read or write


class WorkloadHost(Protocol):
    """What the workload uses of its node (``Runtime`` is one)."""

    @property
    def settings(self) -> Settings: ...
    @property
    def modules(self) -> Mapping[str, Module]: ...
    @property
    def pools(self) -> PoolManager: ...

    async def compose_entry(self, entry: Any) -> dict[str, Any]: ...
    async def run_admin_monitor(self, query: str, params: Mapping[str, str]) -> dict[str, Any]: ...


async def startup_compose(runtime: WorkloadHost) -> None:
    """Compose the settings' pools (or the modules' demo pools); failures are logged, skipped."""
    entries = list(runtime.settings.compose)
    if not entries and runtime.settings.workload.enabled and runtime.settings.workload.pools:
        for module in runtime.modules.values():
            entries.extend(module.demo_entries())
    for entry in entries:
        try:
            await runtime.compose_entry(entry)
        except ApiError as exc:
            log.error("compose entry %s failed: %s", dict(entry), exc.message)


def workload_limits(rate: Any, io_size: Any) -> tuple[float, int]:
    """``(period in seconds, io_size in bytes)`` for the configured ``rate`` and ``io_size``."""
    number = isinstance(rate, int | float) and not isinstance(rate, bool)
    if number and rate > 0 and not math.isnan(rate):
        period = 1.0 / min(float(rate), MAX_RATE)
    else:
        period = 1.0
    size = io_size if isinstance(io_size, int) and not isinstance(io_size, bool) else MAX_IO_SIZE
    return period, min(max(1, size), MAX_IO_SIZE)


async def serve_workload(runtime: WorkloadHost, seed: int | None = None) -> None:
    """Run the synthetic workload forever."""
    rng = random.Random(seed)
    cfg = runtime.settings.workload
    period, io_size = workload_limits(cfg.rate, cfg.io_size)
    if (1 / period, io_size) != (cfg.rate, cfg.io_size):
        log.warning(
            "workload: rate %r and io_size %r clamped to %g steps a second of %d bytes",
            cfg.rate,
            cfg.io_size,
            1 / period,
            io_size,
        )
    failed: set[tuple[str, type]] = set()
    tick = 0
    while True:
        await trio.sleep(period)
        tick += 1
        if tick % 10 == 0:
            await runtime.run_admin_monitor("workers", {})
        pools = [c for c in runtime.pools.all() if c.info.pool_id != ADMIN_POOL_ID and not c.closed]
        if not pools:
            continue
        container = rng.choice(pools)
        try:
            await container.workload_step(rng, io_size)
        except ApiError as exc:
            log.debug("workload step on %s: %s", container.info.pool_id, exc.message)
        except Exception as exc:  # a module's bug: say so once per module and kind, go on
            if (key := (container.info.mod_name, type(exc))) not in failed:
                failed.add(key)
                log.exception("workload step on %s failed", container.info.pool_id)
