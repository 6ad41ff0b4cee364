"""Who watches the clusters started here: the pytest plugin records every cluster a test
started, however it was opened (the ``rt_cluster`` fixture, ``open_cluster`` or
``start_cluster``), so a failed test names each one.

Rules:
1. While ``watching(into)`` holds, every cluster ``start_cluster`` starts in this context (and
   in the trio tasks it spawns: they inherit the context) is appended to ``into``; outside it,
   ``seen`` does nothing.
2. This module imports nothing of the clusters: the plugin loads it with pytest, before any
   test opens one (``pytest_plugin`` rule 7).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["seen", "watching"]

_INTO: ContextVar[list[Any] | None] = ContextVar("rtsim_opened_into", default=None)


@contextmanager
def watching(into: list[Any]) -> Iterator[list[Any]]:
    """Rule 1: collect into ``into`` every cluster started until the block ends."""
    token = _INTO.set(into)
    try:
        yield into
    finally:
        _INTO.reset(token)


def seen(cluster: object) -> None:
    """Rule 1: ``start_cluster`` tells the watcher, if any, of a cluster it started."""
    into = _INTO.get()
    if into is not None:
        into.append(cluster)
