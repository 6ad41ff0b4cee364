"""The one-way cut, the clock and the disk faults of a ``Cluster`` (``chaos``).

Rules:
1. Each call checks its arguments before anything is recorded or done: ``ValueError`` with
   one line, in the words the scenario steps use (``format.faultvalues``).
2. A cut names nodes on both sides, none on both; a disk fault the simulator refuses
   (``backend`` rule 4) is still recorded, as the call the test made.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..format.faultvalues import check_clock, check_disk
from ..judge.trace import Action
from .backend import Backend

__all__ = ["FaultCalls", "ids_of"]


def ids_of(nodes: int | Iterable[int]) -> list[int]:
    """One node id or several, sorted without repeats."""
    if isinstance(nodes, int):
        return [nodes]
    return sorted({int(i) for i in nodes})


class FaultCalls:
    """``Cluster.cut``, ``clock`` and ``disk`` (``chaos``, which supplies what is declared)."""

    backend: Backend

    if TYPE_CHECKING:  # supplied by ``Cluster``

        def _known(self, *ids: int) -> None: ...

        def _record(
            self, kind: str, nodes: Iterable[int] = (), name: str | None = None, **kw: Any
        ) -> Action: ...

    async def cut(
        self, src: int | Iterable[int], dst: int | Iterable[int], *, name: str | None = None
    ) -> None:
        """Drop everything a node of ``src`` sends to a node of ``dst`` (one way: what ``dst``
        sends still arrives; push/pulls between them fail either way). Cuts add up; ``heal``
        removes them."""
        froms, tos = ids_of(src), ids_of(dst)
        self._known(*froms, *tos)
        if not froms or not tos:
            raise ValueError("a cut needs nodes on both sides")
        if both := sorted(set(froms) & set(tos)):
            raise ValueError(f"a cut from a node to itself: node {both[0]} is on both sides")
        self._record("cut", froms, name, groups=(tuple(froms), tuple(tos)))
        await self.backend.cut(froms, tos)

    async def clock(
        self, i: int, offset: float = 0.0, rate: float = 1.0, *, name: str | None = None
    ) -> None:
        """Node ``i``'s wall clock reads true + ``offset`` seconds (a jump, either way, up to
        a year) and its clock runs at ``rate`` (0.5..2.0) times real speed; ``heal`` resets
        it. A restart keeps it."""
        self._known(i)
        check_clock(offset, rate)
        self._record("clock", (i,), name, value=float(offset), rate=float(rate))
        await self.backend.clock(i, float(offset), float(rate))

    async def disk(
        self,
        i: int,
        pool: str,
        latency_ms: float = 0.0,
        errors: float = 0.0,
        full: bool = False,
        *,
        name: str | None = None,
    ) -> None:
        """Node ``i``'s device ``pool`` delays each operation by ``latency_ms``, fails
        ``errors`` percent of reads and writes, and with ``full`` refuses growth; real node
        processes only (the simulator refuses it: ``ClusterError``)."""
        self._known(i)
        check_disk(pool, latency_ms, errors)
        kw: dict[str, Any] = {"pool": pool, "errors": float(errors), "full": bool(full)}
        self._record("disk", (i,), name, value=float(latency_ms), **kw)
        await self.backend.disk(i, pool, float(latency_ms), float(errors), bool(full))
