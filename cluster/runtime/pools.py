"""The pool table of one node: containers by pool id, and the ids and names being started.

Rules:
1. A pool is in the table only once its container has started: no task sees a half-made pool.
   While it starts, its id and name are reserved (``reserve``), so a second compose of the same
   id or name is refused, and nothing else can find it.
2. Every change is synchronous (no checkpoint inside), so no lock is needed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from cluster.errors import Forbidden, NotFound
from cluster.ids import ADMIN_POOL_ID, PoolId

from .module import Container, PoolInfo

__all__ = ["PoolManager"]


class PoolManager:
    def __init__(self) -> None:
        self._pools: dict[PoolId, Container] = {}
        self._starting: dict[PoolId, PoolInfo] = {}
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

    def id_owner(self, pool_id: PoolId) -> str | None:
        """The name of the pool that has (or is starting with) ``pool_id``, or None."""
        if pool_id in self._pools:
            return self._pools[pool_id].info.pool_name
        info = self._starting.get(pool_id)
        return info.pool_name if info is not None else None

    def name_owner(self, name: str) -> PoolId | None:
        """The id of the pool named (or starting as) ``name``, or None."""
        infos = [*(c.info for c in self._pools.values()), *self._starting.values()]
        return next((i.pool_id for i in infos if i.pool_name == name), None)

    @contextmanager
    def reserve(self, info: PoolInfo) -> Iterator[None]:
        """Hold ``info``'s id and name while its container starts."""
        self._starting[info.pool_id] = info
        try:
            yield
        finally:
            del self._starting[info.pool_id]

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
            if self.id_owner(pid) is None and pid not in self._suggested:
                self._suggested.add(pid)
                return pid
            major += 1
