"""The forks of a launch: nodes submitted in order and taken back forked, in that order.

Rules:
1. ``Forks`` forks each node as it is submitted (a zygote of its own per node, in namespaces).
2. ``AheadForks`` writes each request to the one zygote at once and reads its answer later,
   so the zygote forks the next node while the launcher records the last one, asks who is
   ready and reports progress (issue 33: at 250 nodes each side took about 80 ms a fork).
   Taken forks reach the record file at ``save_forks`` (``startup`` rule 1); ``close``
   takes every fork still in flight and saves them all, whatever ended the launch.
"""

from __future__ import annotations

import contextlib
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

from .record import ClusterError, NodeRecord

if TYPE_CHECKING:
    from .processes import Zygote

__all__ = ["AheadForks", "Forking", "Forks"]


class Forking(Protocol):
    """The halves of a fork ``AheadForks`` asks of its cluster (``TrackedCluster``)."""

    def send_fork(self, zygote: Zygote, node_id: int) -> None: ...

    def take_fork(self, zygote: Zygote, node_id: int, *, save: bool = True) -> NodeRecord: ...

    def save_forks(self) -> None: ...


class Forks:
    """Rule 1."""

    def __init__(self, fork: Callable[[NodeRecord], NodeRecord]) -> None:
        self._fork = fork
        self._forked: deque[NodeRecord] = deque()

    @property
    def in_flight(self) -> int:
        """Submitted and not yet taken."""
        return len(self._forked)

    def submit(self, rec: NodeRecord) -> None:
        self._forked.append(self._fork(rec))

    def take(self) -> NodeRecord:
        """The oldest submitted node, forked (ClusterError when it could not be)."""
        return self._forked.popleft()

    def close(self) -> None:
        """Every fork is taken and recorded."""
        self._forked.clear()


class AheadForks(Forks):
    """Rule 2: ``Forks``' queue holds the nodes asked for, not yet answered."""

    def __init__(self, cluster: Forking, zygote: Zygote) -> None:
        super().__init__(self._ask)
        self._cluster = cluster
        self._zygote = zygote

    def _ask(self, rec: NodeRecord) -> NodeRecord:
        self._cluster.send_fork(self._zygote, rec.node_id)
        return rec

    def take(self) -> NodeRecord:
        return self._cluster.take_fork(self._zygote, super().take().node_id, save=False)

    def close(self) -> None:
        try:
            while self.in_flight:
                with contextlib.suppress(ClusterError):  # its watcher recorded it, if it ran
                    self.take()
        finally:
            self._cluster.save_forks()
