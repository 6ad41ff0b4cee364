"""The pool manager: which pools are composed on this node, and free pool-id suggestions.

Changes are sync (no checkpoint inside), so no other trio task sees a half-made change.
"""

from __future__ import annotations

from cluster.errors import Forbidden, NotFound
from cluster.ids import ADMIN_POOL_ID, PoolId

from .module import Container

__all__ = ["PoolManager"]


class PoolManager:
    def __init__(self) -> None:
        self._pools: dict[PoolId, Container] = {}
        self._suggested: set[PoolId] = set()

    def __contains__(self, pool_id: PoolId) -> bool:
        return pool_id in self._pools

    def __len__(self) -> int:
        return len(self._pools)

    def all(self) -> list[Container]:
        """Every container, sorted by pool id."""
        return [self._pools[k] for k in sorted(self._pools)]

    def get(self, pool_id: PoolId) -> Container:
        try:
            return self._pools[pool_id]
        except KeyError:
            raise NotFound(f"no pool with id {pool_id}") from None

    def find(self, pool_id: PoolId) -> Container | None:
        return self._pools.get(pool_id)

    def by_name(self, name: str, mod_name: str | None = None) -> Container | None:
        for c in self._pools.values():
            if c.info.pool_name == name and (mod_name is None or c.info.mod_name == mod_name):
                return c
        return None

    def of_module(self, mod_name: str) -> list[Container]:
        return [c for c in self.all() if c.info.mod_name == mod_name]

    def add(self, container: Container) -> None:
        self._pools[container.info.pool_id] = container

    def remove(self, pool_id: PoolId) -> Container:
        """Take a pool out of the table; the admin pool is refused."""
        if pool_id == ADMIN_POOL_ID:
            raise Forbidden(
                "refusing to destroy the admin pool -- that is the runtime itself; use rt_run stop"
            )
        container = self.get(pool_id)
        del self._pools[pool_id]
        return container

    def suggest(self, base: int) -> PoolId:
        """The smallest free ``<major>.0`` at or above ``base``, never suggested twice."""
        major = base
        while True:
            pid = PoolId(major, 0)
            if pid not in self._pools and pid not in self._suggested:
                self._suggested.add(pid)
                return pid
            major += 1
