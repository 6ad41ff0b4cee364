"""Arrays in a chaos test: an erasure-coded array on one node of a cluster (real processes or
whole simulated nodes), its members on others, the writes it acknowledged and the check that
none was lost (docs/testing.md).

    async with open_cluster(4, mode="real") as c:
        arr = await c.make_array(owner=0, members=[1, 2], parity=[3])
        await arr.write(records=40)
        await c.kill(2)
        await arr.wait_degraded()
        assert (await arr.check()).ok

Rules:
1. The same array and ledger as a scenario's ``storage:`` section (``play.storage``):
   one RAM ``rt_bdev`` pool per member node, the array ``rt_array`` on the owner; one array
   a cluster (a second ``make_array`` is refused: the names are taken).
2. Real processes (``real`` or ``netns``) or whole simulated nodes (``open_cluster(...,
   mode="sim", whole=True)``, over their ``transport``): the membership simulator has no
   arrays, and ``make_array`` says so at once.
3. Waits poll the owner's ``stats`` and end with ``WaitTimeout`` naming what was awaited and
   what the array said last.
4. A member whose node was killed comes back only onto a spare: its RAM device is gone with
   the process (docs/storage.md). ``auto_replace_after_s`` (1 s to a day; off when None) is
   the array's own setting of that name (``arrayrun`` rule 5).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import httpx
import trio

from ..format.records import StorageSpec
from ..judge.checks import Verdict
from .arrayrun import ARRAY_POOL, StorageRun, post_form
from .waits import WaitTimeout

__all__ = ["Array", "Durability", "LostWrite", "make_array"]

POLL = 0.05  # seconds between two reads of the array's stats


@dataclass(frozen=True, slots=True)
class LostWrite:
    """An acknowledged record that did not read back: where it is and why."""

    offset: int
    size: int
    why: str


@dataclass(frozen=True, slots=True)
class Durability:
    """What ``Array.check`` found: records read back and the ones lost (the first 100)."""

    checked: int
    lost_count: int
    lost: tuple[LostWrite, ...]

    @property
    def ok(self) -> bool:
        """At least one acknowledged record, and none lost."""
        return self.checked > 0 and self.lost_count == 0

    def verdict(self) -> Verdict:
        """As a checker's verdict, for ``Cluster.check``'s report and your own."""
        detail = f"{self.checked} acknowledged records read back, {self.lost_count} lost"
        if self.lost:
            first = self.lost[0]
            detail += f"; first: {first.size} bytes at {first.offset}: {first.why}"
        return Verdict("no_lost_writes", self.ok, float(self.lost_count), None, detail)


class Array:
    """The array ``rt_array`` on node ``owner`` (build one with ``Cluster.make_array``)."""

    def __init__(
        self,
        spec: StorageSpec,
        url: Callable[[int], str | None],
        transport: Any,
        auto_replace_after_s: float | None = None,
    ) -> None:
        self.spec = spec
        self.owner = spec.array
        self._url = url
        self._run = StorageRun(spec, transport, auto_replace_after_s=auto_replace_after_s)
        self._seed = 0

    def _base(self) -> str:
        base = self._url(self.owner)
        if not base:
            raise RuntimeError(f"node {self.owner}, the array's owner, serves no dashboard")
        return base

    async def _post(self, route: str, form: dict[str, str], timeout: float = 60) -> Any:
        path = f"/api/mod/rt_safe_bdev/{ARRAY_POOL}/{route}"
        async with httpx.AsyncClient(timeout=timeout, transport=self._run.transport) as client:
            return await post_form(client, self._base(), path, form)

    async def write(self, records: int = 16, size: int = 8192) -> int:
        """Write ``records`` checksummed records of ``size`` bytes; how many the owner
        acknowledged (the others failed: the array could not take them)."""
        self._seed += 1
        form = {"op": "write", "count": str(records), "size": str(size), "seed": str(self._seed)}
        return int((await self._post("durability", form))["acknowledged"])

    async def check(self) -> Durability:
        """Read every acknowledged record back on the owner."""
        body = await self._post("durability", {"op": "check"})
        lost = tuple(
            LostWrite(int(x["offset"]), int(x["size"]), str(x["why"])) for x in body["lost"]
        )
        return Durability(int(body["checked"]), int(body["lost_count"]), lost)

    async def stats(self) -> dict[str, Any]:
        """The owner's ``stats`` of the array: members (with their ``node_id``), states,
        recovery figures."""
        async with httpx.AsyncClient(timeout=30, transport=self._run.transport) as client:
            r = await client.get(
                f"{self._base()}/api/pools/{ARRAY_POOL}/monitor", params={"query": "stats"}
            )
        if r.status_code != 200:
            raise RuntimeError(f"stats of the array: {r.status_code} {r.text[:300]}")
        (answer,) = r.json()["results"].values()
        return dict(answer)

    async def wait_degraded(self, timeout: float = 30.0) -> dict[str, Any]:
        """Until a member is faulty and nothing recovers onto it; the stats then."""
        return await self._until("the array degraded", timeout, _degraded)

    async def wait_recovered(self, timeout: float = 60.0) -> dict[str, Any]:
        """Until every member is active again (reattached or replaced, rebuilt); the stats."""
        return await self._until("the array recovered", timeout, _recovered)

    async def _until(
        self, what: str, timeout: float, done: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        last: dict[str, Any] = {}
        with trio.move_on_after(timeout):
            while True:
                last = await self.stats()
                if done(last):
                    return last
                await trio.sleep(POLL)
        said = {k: last.get(k) for k in ("recovery_state", "active_members", "faulty_members")}
        raise WaitTimeout(f"{what}: not within {timeout:g} s; the array says {said}")


def _degraded(s: dict[str, Any]) -> bool:
    return bool(s.get("recovery_state") == "degraded")


def _recovered(s: dict[str, Any]) -> bool:
    members = s.get("members") or []
    return bool(members) and s.get("active_members") == len(members)


async def make_array(
    url: Callable[[int], str | None],
    transport: Any,
    mode: str,
    *,
    owner: int = 0,
    members: Sequence[int] = (1, 2),
    parity: Sequence[int] = (3,),
    capacity: str = "4M",
    auto_replace_after_s: float | None = None,
) -> Array:
    """The array of rule 1 on a cluster whose node ``i`` serves its dashboard at ``url(i)``
    (reached over ``transport``, or the network when None); with ``auto_replace_after_s``, a
    member away that long is replaced onto a spare (rule 4)."""
    if mode == "sim" and transport is None:
        raise RuntimeError(
            "arrays need whole nodes: open the cluster with mode='real' or 'netns', or "
            "mode='sim' with whole=True"
        )
    nodes = [owner, *members, *parity]
    if len(set(nodes[1:])) != len(nodes) - 1:
        raise ValueError("each member on a node of its own")
    spec = StorageSpec(owner, tuple(members), tuple(parity), capacity, 1.0, 1, 1)
    array = Array(spec, url, transport, auto_replace_after_s)
    await array._run.set_up(url)
    return array
