"""The synthetic workload: tasks on the node's pools at a modest rate, so every statistic moves.

At start, the settings' compose section is composed; when it is empty and ``workload.pools``
is on, each module's ``demo_entries`` are composed instead (a small device, array and target).
Then, ``workload.rate`` times a second, one pool's ``workload_step`` runs (module I/O as
worker tasks), and the admin pool gets a monitor task now and then.
"""

from __future__ import annotations

import logging
import random

import trio

from cluster.errors import ApiError
from cluster.ids import ADMIN_POOL_ID

from .runtime import Runtime

__all__ = ["serve_workload", "startup_compose"]

log = logging.getLogger(__name__)


async def startup_compose(runtime: Runtime) -> None:
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


async def serve_workload(runtime: Runtime, seed: int | None = None) -> None:
    """Run the synthetic workload forever."""
    rng = random.Random(seed)
    cfg = runtime.settings.workload
    period = 1.0 / cfg.rate if cfg.rate > 0 else 1.0
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
            await container.workload_step(rng, cfg.io_size)
        except ApiError as exc:
            log.debug("workload step on %s: %s", container.info.pool_id, exc.message)
