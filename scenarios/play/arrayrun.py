"""A scenario's array on real processes: made before the start, written through the run,
checked at the end (the ``storage:`` section: ``format.storage``).

Rules:
1. Before the start, node ``array`` composes the array ``rt_array`` over one ``rt_bdev`` pool
   ``rt_m<node>`` (RAM, ``capacity``) on each member node; the member nodes are distinct.
2. Through the run, every ``every`` seconds, the owner is asked to write ``records`` records
   of ``size`` bytes (``rt_safe_bdev``'s ``durability`` route). The owner keeps the ledger of
   the writes it acknowledged; a request that fails or times out is counted, never retried.
3. After the run, the owner reads every acknowledged record back (judged by
   ``judge.durability``) and says how the array stands (its ``stats``, under ``array``, and
   what its ``verify`` found of every written slot's blocks, under ``array.verify``:
   ``array_recovers``).
4. Over ``transport`` (an httpx transport; None: the network): whole nodes in the simulator
   take the same requests in memory (``cluster.sim.inmemoryhttp``). The membership simulator
   has no arrays: the section is ignored there.
5. ``auto_replace_after_s`` (``Cluster.make_array``'s, a file's ``replace_after``; None: off)
   goes into the array's configuration as it stands: ``rt_safe_bdev`` checks it (1 s to a day)
   and a refusal is the ``RuntimeError`` of rule 1.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import httpx
import trio

from ..format.records import StorageSpec

__all__ = ["ARRAY_NAME", "ARRAY_POOL", "StorageRun", "post_form"]

ARRAY_NAME, ARRAY_POOL = "rt_array", "950.0"
MEMBER_BASE = 951  # pool ids of the members: 951.0, 952.0, ... (distinct in the array)
TIMEOUT = 10.0  # seconds for one request to the owner
ARRAY_STATE = (
    "recovery_state",
    "active_members",
    "faulty_members",
    "recovering_members",
    "removed_members",
    "members",
)  # rule 3: what the check keeps of the stats


@dataclass
class StorageRun:
    """Rules 1-3 against live dashboards (``url(i)``: node i's base URL, or None)."""

    spec: StorageSpec
    transport: Any = None  # rule 4
    auto_replace_after_s: float | None = None  # rule 5
    sent: int = 0
    failed: int = 0

    async def set_up(self, url: Any) -> None:
        """Rule 1: the member pools, then the array; ``RuntimeError`` naming a refusal."""
        s = self.spec
        async with httpx.AsyncClient(timeout=30, transport=self.transport) as client:
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
            if self.auto_replace_after_s is not None:  # rule 5
                config += f"auto_replace_after_s: {self.auto_replace_after_s!r}\n"
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
        async with httpx.AsyncClient(timeout=TIMEOUT, transport=self.transport) as client:
            while True:
                t = trio.current_time()
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
                await trio.sleep_until(t + s.every)

    async def check(self, url: Any) -> dict[str, Any]:
        """Rule 3: the owner's read-back of every acknowledged record."""
        out: dict[str, Any] = {"requests": self.sent, "requests_failed": self.failed}
        out["replace_after"] = self.auto_replace_after_s  # ``array_recovers``: a spare exists
        base = url(self.spec.array)
        try:
            if base is None:
                raise RuntimeError(f"node {self.spec.array} serves no dashboard")
            async with httpx.AsyncClient(timeout=60, transport=self.transport) as client:
                stats = await client.get(
                    f"{base}/api/pools/{ARRAY_POOL}/monitor", params={"query": "stats"}
                )
                body = await post_form(client, base, _durability(), {"op": "check"})
                verify = await client.get(
                    f"{base}/api/pools/{ARRAY_POOL}/monitor", params={"query": "verify"}
                )
            if stats.status_code == 200:
                (answer,) = stats.json()["results"].values()
                out["array"] = {k: answer.get(k) for k in ARRAY_STATE}
                if verify.status_code == 200:  # rule 3: every written slot, every block read
                    (checked,) = verify.json()["results"].values()
                    out["array"]["verify"] = dict(checked)
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
