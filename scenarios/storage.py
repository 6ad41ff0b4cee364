"""A scenario's array and the durability check (``no_lost_writes``) on real processes.

A scenario file's ``storage:`` section puts an erasure-coded array on one node with its
members on others, and keeps writing checksummed records to it through the run::

    storage: {array: 0, members: [1, 2], parity: [3], capacity: 4M,
              writes: {every: 0.5, records: 4, size: 8192}}

Rules:
1. Before the start, node ``array`` composes the array ``rt_array`` over one ``rt_bdev`` pool
   ``rt_m<node>`` (RAM, ``capacity``) on each member node; the member nodes are distinct.
2. Through the run, every ``every`` seconds, the owner is asked to write ``records`` records
   of ``size`` bytes (``rt_safe_bdev``'s ``durability`` route). The owner keeps the ledger of
   the writes it acknowledged; a request that fails or times out is counted, never retried.
3. After the run, the owner reads every acknowledged record back. ``no_lost_writes`` passes
   when at least one record was acknowledged and none reads back different or unreadable;
   when the owner does not answer, nothing can be checked and it fails, saying so.
4. On the simulated network there are no arrays: the section is ignored and the expectation
   is ``not_applicable``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx
import trio

from .records import StorageSpec
from .trace import Trace
from .values import Checker

__all__ = ["ARRAY_NAME", "ARRAY_POOL", "StorageRun", "judge_storage", "parse_storage", "post_form"]

ARRAY_NAME, ARRAY_POOL = "rt_array", "950.0"
MEMBER_BASE = 951  # pool ids of the members: 951.0, 952.0, ... (distinct in the array)
_KEYS = {"array", "members", "parity", "capacity", "writes"}
_WRITE_KEYS = {"every", "records", "size"}
TIMEOUT = 10.0  # seconds for one request to the owner


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
    )


def _ids(c: Checker, raw: Any, where: str, nodes: int) -> list[int]:
    if not isinstance(raw, list):
        raise c.fail(where, f"expected a list of node ids, got {raw!r}")
    return [c.integer(v, where, low=0, high=nodes - 1) for v in raw]


@dataclass
class StorageRun:
    """Rules 1-3 against live dashboards (``url(i)``: node i's base URL, or None)."""

    spec: StorageSpec
    sent: int = 0
    failed: int = 0

    async def set_up(self, url: Any) -> None:
        """Rule 1: the member pools, then the array; ``RuntimeError`` naming a refusal."""
        s = self.spec
        async with httpx.AsyncClient(timeout=30) as client:
            names = []
            for k, node in enumerate((*s.members, *s.parity)):
                form = {
                    "pool_name": f"rt_m{node}",
                    "pool_id": f"{MEMBER_BASE + k}.0",
                    "bdev_type": "ram",
                    "capacity": s.capacity,
                }
                await post_form(client, url(node), "/api/mod/rt_bdev/create", form)
                names.append(f"rt_m{node}@{node}")
            data, parity = names[: len(s.members)], names[len(s.members) :]
            config = (
                f"members: {','.join(data)}\nparity_members: {','.join(parity) or '[]'}\n"
                f"max_failures: {len(parity)}\nrecover_pace_s: 0\n"
            )
            form = {
                "mod_name": "rt_safe_bdev",
                "pool_name": ARRAY_NAME,
                "pool_id": ARRAY_POOL,
                "config": config,
            }
            await post_form(client, url(s.array), "/api/pools/compose", form)

    async def serve_writes(self, url: Any) -> None:
        """Rule 2, until cancelled."""
        s, seed = self.spec, 0
        async with httpx.AsyncClient(timeout=TIMEOUT) as client:
            while True:
                t = time.monotonic()
                seed += 1
                form = {
                    "op": "write",
                    "count": str(s.records),
                    "size": str(s.size),
                    "seed": str(seed),
                }
                self.sent += 1
                base = url(s.array)
                try:
                    if base is None:
                        raise RuntimeError("no dashboard")
                    await post_form(client, base, _durability(), form)
                except (RuntimeError, httpx.HTTPError):
                    self.failed += 1
                await trio.sleep(max(0.0, t + s.every - time.monotonic()))

    async def check(self, url: Any) -> dict[str, Any]:
        """Rule 3: the owner's read-back of every acknowledged record."""
        out: dict[str, Any] = {"requests": self.sent, "requests_failed": self.failed}
        base = url(self.spec.array)
        try:
            if base is None:
                raise RuntimeError(f"node {self.spec.array} serves no dashboard")
            async with httpx.AsyncClient(timeout=60) as client:
                body = await post_form(client, base, _durability(), {"op": "check"})
        except (RuntimeError, httpx.HTTPError) as exc:
            return {**out, "error": f"the array's owner did not answer: {exc}"}
        return {**out, **body}


def _durability() -> str:
    return f"/api/mod/rt_safe_bdev/{ARRAY_POOL}/durability"


async def post_form(client: httpx.AsyncClient, base: str, path: str, form: dict[str, str]) -> Any:
    """One form POST to a node's dashboard; its JSON, or RuntimeError naming the refusal."""
    r = await client.post(base + path, data=form)
    if r.status_code != 200:
        raise RuntimeError(f"POST {path}: {r.status_code} {r.text[:200]}")
    return r.json()


def judge_storage(trace: Trace) -> dict[str, Any]:
    """``no_lost_writes`` over a trace (rules 3 and 4)."""
    if trace.mode == "sim":
        return {
            "status": "not_applicable",
            "measured": None,
            "detail": "no arrays on the simulated network",
        }
    got = trace.storage
    if got is None:
        return {"status": "fail", "measured": None, "detail": "the scenario has no storage"}
    if "error" in got:
        return {"status": "fail", "measured": None, "detail": got["error"]}
    lost, checked = int(got.get("lost_count", 0)), int(got.get("checked", 0))
    detail = f"{checked} acknowledged records read back, {lost} lost"
    if lost:
        first = got["lost"][0]
        detail += f"; first: {first['size']} bytes at {first['offset']}: {first['why']}"
    ok = checked > 0 and lost == 0
    if checked == 0:
        detail = "no write was acknowledged: nothing to check"
    return {"status": "pass" if ok else "fail", "measured": lost, "detail": detail}
