"""Reusable byte matrices for coding runs of an array.

A fresh array of a few MiB costs a page fault per 4 KiB page on every use (the C allocator
hands large blocks back to the kernel when they are freed), which made reading and rebuilding
a run cost twice its copy. A matrix taken from here is reused instead.

Rules:
1. A taken matrix belongs to the taker until its ``with`` block ends; nothing taken from it
   (views, memoryviews) may be used after.
2. At most ``keep`` matrices are kept between uses (the most recently given back), so an idle
   array holds at most ``keep`` of them; numpy is imported on the first ``take``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from .erasure import load_numpy

if TYPE_CHECKING:
    from .erasure import Bytes

__all__ = ["ScratchPool"]


class ScratchPool:
    """Matrices of ``rows`` x ``size`` bytes, reused across runs."""

    def __init__(self, keep: int = 2) -> None:
        self.keep = keep
        self._free: list[Bytes] = []

    @contextmanager
    def take(self, rows: int, size: int) -> Iterator[Bytes]:
        np = load_numpy()
        at = next((i for i, a in enumerate(self._free) if a.shape == (rows, size)), None)
        matrix = self._free.pop(at) if at is not None else np.empty((rows, size), np.uint8)
        try:
            yield matrix
        finally:
            self._free.append(matrix)
            del self._free[: -self.keep or len(self._free)]

    def clear(self) -> None:
        """Drop every kept matrix."""
        self._free.clear()
