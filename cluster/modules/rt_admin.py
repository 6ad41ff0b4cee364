"""rt_admin: the admin pool ``1.0``, which is the runtime itself.

Its monitor answers the per-node queries (workers, system_stats, containers, bdevs, ...); a
per-node query addressed to a peer is one such monitor task sent to the peer's admin pool.
Its HTTP routes are the dashboard's node-local, per-node and per-pool routes, and the
conventional ``pools`` of every ``HttpModule``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cluster.api import HttpModule
from cluster.runtime import Container

__all__ = ["AdminContainer", "AdminModule"]


class AdminContainer(Container):
    methods = ("monitor", "compose", "destroy")

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        if query == "stats":
            return self.stats()
        return self.runtime.admin_monitor(query, params)

    def stats(self) -> dict[str, Any]:
        rows = self.runtime.workers.snapshot()
        return {
            "pool_name": self.info.pool_name,
            "num_pools": len(self.runtime.pools),
            "num_workers": len(rows),
            "num_tasks_processed": sum(r["num_tasks_processed"] for r in rows),
            "num_queued_tasks": sum(r["num_queued_tasks"] for r in rows),
        }


class AdminModule(HttpModule):
    mod_name = "rt_admin"
    title = "Runtime admin"
    container_class = AdminContainer
    config_keys = ()  # the admin pool is the runtime itself: nothing to compose
