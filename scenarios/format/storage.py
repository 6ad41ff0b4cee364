"""A scenario file's ``storage:`` section: an erasure-coded array on one node with its members
on others, and the writes it takes through the run (what it does: ``play.storage``; how it
is judged, ``no_lost_writes``: ``judge.durability``)::

    storage: {array: 0, members: [1, 2], parity: [3], capacity: 4M,
              writes: {every: 0.5, records: 4, size: 8192}, replace_after: 10}

Rules:
1. ``array`` is the owner node; the member nodes (``members``, then ``parity``) are distinct
   nodes of the cluster at the start; ``capacity`` is each member device's size as written.
2. ``writes``: a request every ``every`` seconds (0.05..60) of ``records`` records (1..100) of
   ``size`` bytes (1..1 MiB).
3. ``replace_after`` (seconds, 1..86400; absent: never): a member away that long is replaced
   onto a spare the array makes on a live node (``rt_safe_bdev``'s ``auto_replace_after_s``),
   so a member lost with its node's process comes back too.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .records import StorageSpec
from .values import Checker

__all__ = ["parse_storage"]

_KEYS = {"array", "members", "parity", "capacity", "writes", "replace_after"}
_WRITE_KEYS = {"every", "records", "size"}


def parse_storage(c: Checker, raw: Any, nodes: int) -> StorageSpec | None:
    """The ``storage:`` section, strictly (rule 1); None when absent."""
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise c.fail("storage", "expected {array: N, members: [..], parity: [..]}")
    extra = sorted(set(map(str, raw)) - _KEYS)
    if extra:
        raise c.fail("storage", f"unknown key {extra[0]!r} (known: {', '.join(sorted(_KEYS))})")
    owner = c.integer(raw.get("array", 0), "storage: array", low=0, high=nodes - 1)
    members = _ids(c, raw.get("members"), "storage: members", nodes)
    parity = _ids(c, raw.get("parity", []), "storage: parity", nodes)
    if not members:
        raise c.fail("storage: members", "at least one member node")
    if len(set(members + parity)) != len(members + parity):
        raise c.fail("storage", "each member on a node of its own")
    capacity = raw.get("capacity", "4M")
    if not isinstance(capacity, str) or not capacity[:1].isdigit() or len(capacity) > 20:
        raise c.fail("storage: capacity", f"expected a size like 4M, got {capacity!r}")
    w = raw.get("writes") or {}
    if not isinstance(w, Mapping) or set(map(str, w)) - _WRITE_KEYS:
        raise c.fail("storage: writes", "expected {every: S, records: N, size: BYTES}")
    return StorageSpec(
        owner,
        tuple(members),
        tuple(parity),
        capacity,
        c.number(w.get("every", 0.5), "storage: writes.every", low=0.05, high=60),
        c.integer(w.get("records", 4), "storage: writes.records", low=1, high=100),
        c.integer(w.get("size", 8192), "storage: writes.size", low=1, high=1 << 20),
        None
        if raw.get("replace_after") is None
        else c.number(raw["replace_after"], "storage: replace_after", low=1, high=86400),
    )


def _ids(c: Checker, raw: Any, where: str, nodes: int) -> list[int]:
    if not isinstance(raw, list):
        raise c.fail(where, f"expected a list of node ids, got {raw!r}")
    return [c.integer(v, where, low=0, high=nodes - 1) for v in raw]
