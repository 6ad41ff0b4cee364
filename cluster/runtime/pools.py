"""The pool table of one node: containers by pool id, and the ids and names being started.

Rules:
1. A pool is in the table only once its container has started: no task sees a half-made pool.
   While it starts, its id and name are reserved (``reserve``), so a second compose of the same
   id or name is refused, and nothing else can find it.
2. Every change is synchronous (no checkpoint inside), so no lock is needed.
3. A suggestion reserves nothing: it is the smallest ``<major>.0`` at or above a base that no
   pool has (or is starting with) right now. Two forms may show the same id; the first compose
   takes it and the second is refused as taken (``ValidationFailed``), so its form asks
   again.
4. Suggesting is O(log n): the taken majors (of ``<major>.0`` ids) are kept as sorted runs of
   consecutive majors, so the next free one is one bisection away, however many pools exist.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from contextlib import contextmanager

from cluster.ground.errors import Forbidden, NotFound
from cluster.ground.ids import ADMIN_POOL_ID, PoolId

from .module import Container, PoolInfo

__all__ = ["MajorRuns", "PoolManager"]


class MajorRuns:
    """A set of integers kept as sorted, disjoint runs ``[start, end)`` of consecutive ones."""

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def __len__(self) -> int:
        return len(self._starts)

    def _run_of(self, x: int) -> int:
        """The index of the run holding ``x``, or -1."""
        i = bisect.bisect_right(self._starts, x) - 1
        return i if i >= 0 and x < self._ends[i] else -1

    def __contains__(self, x: int) -> bool:
        return self._run_of(x) >= 0

    def next_free(self, x: int) -> int:
        """The smallest integer at or above ``x`` not in the set."""
        i = self._run_of(x)
        return self._ends[i] if i >= 0 else x

    def add(self, x: int) -> None:
        if x in self:
            return
        i = bisect.bisect_right(self._starts, x)  # the run after x
        joins_before = i > 0 and self._ends[i - 1] == x
        joins_after = i < len(self._starts) and self._starts[i] == x + 1
        if joins_before and joins_after:
            self._ends[i - 1] = self._ends[i]
            del self._starts[i], self._ends[i]
        elif joins_before:
            self._ends[i - 1] = x + 1
        elif joins_after:
            self._starts[i] = x
        else:
            self._starts.insert(i, x)
            self._ends.insert(i, x + 1)

    def discard(self, x: int) -> None:
        i = self._run_of(x)
        if i < 0:
            return
        start, end = self._starts[i], self._ends[i]
        if start == x and end == x + 1:
            del self._starts[i], self._ends[i]
        elif start == x:
            self._starts[i] = x + 1
        elif end == x + 1:
            self._ends[i] = x
        else:  # split the run around x
            self._ends[i] = x
            self._starts.insert(i + 1, x + 1)
            self._ends.insert(i + 1, end)


class PoolManager:
    def __init__(self) -> None:
        self._pools: dict[PoolId, Container] = {}
        self._starting: dict[PoolId, PoolInfo] = {}
        self._taken_majors = MajorRuns()  # majors of the <major>.0 ids in either table

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

    def _track(self, pool_id: PoolId) -> None:
        """Bring the taken majors up to date for ``pool_id`` after a change of either table."""
        if pool_id.minor != 0:
            return
        if pool_id in self._pools or pool_id in self._starting:
            self._taken_majors.add(pool_id.major)
        else:
            self._taken_majors.discard(pool_id.major)

    @contextmanager
    def reserve(self, info: PoolInfo) -> Iterator[None]:
        """Hold ``info``'s id and name while its container starts."""
        self._starting[info.pool_id] = info
        self._track(info.pool_id)
        try:
            yield
        finally:
            del self._starting[info.pool_id]
            self._track(info.pool_id)

    def add(self, container: Container) -> None:
        self._pools[container.info.pool_id] = container
        self._track(container.info.pool_id)

    def remove(self, pool_id: PoolId) -> Container:
        """Take a pool out of the table; the admin pool is refused."""
        if pool_id == ADMIN_POOL_ID:
            raise Forbidden(
                "refusing to destroy the admin pool -- that is the runtime itself; use rt_run stop"
            )
        container = self.get(pool_id)
        del self._pools[pool_id]
        self._track(pool_id)
        return container

    def suggest(self, base: int) -> PoolId:
        """The smallest free ``<major>.0`` at or above ``base`` (reserves nothing)."""
        return PoolId(self._taken_majors.next_free(base), 0)
