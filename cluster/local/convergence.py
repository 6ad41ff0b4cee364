"""The one wait for a local cluster to converge, for clusters of nodes (``LocalCluster``) and
of nodes and Serf agents (``MixedCluster``) alike.

Rules:
1. Converged means every expected member lists exactly the expected members alive. What a
   member lists and how it is judged is the cluster's (``Looking``): a node's topology by
   id, or in a mixed cluster by name, an agent's ``serf members``.
2. Each look first checks that no expected member's process ended (NodeFailed naming it and
   its log), then asks only the members not yet seen converged; once none is left, one last
   look asks every one of them and must find them all still converged.
3. Looks are ``max(0.25, n / 500)`` seconds apart, so a big cluster is not asked back to
   back; the last look comes at once. At most ``ASK_AT_ONCE`` questions are in flight.
4. After ``timeout`` seconds the wait ends with ClusterError saying how many converged and,
   where the cluster can say, what the first member behind lists.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import trio

from .record import ClusterError, ClusterRecord

__all__ = ["ASK_AT_ONCE", "Looking", "sees_all", "wait_converged"]

ASK_AT_ONCE = 64  # questions in flight at once when every node of a cluster is asked


def sees_all(body: Any, expect: set[int]) -> bool:
    """Whether a node's topology body (None: no answer) lists exactly ``expect`` alive."""
    if not isinstance(body, dict):
        return False
    alive = {n.get("node_id") for n in body.get("nodes", ()) if n.get("state") == "alive"}
    return alive == expect


class Looking(Protocol):
    """What the wait asks of a cluster (rule 1)."""

    @property
    def record(self) -> ClusterRecord: ...

    noun: str  # what the members are called in a timeout's message: "nodes", "members"

    async def require_running(self, expect: set[int]) -> None:
        """NodeFailed for the first member of ``expect`` whose process ended."""

    async def behind(self, expect: set[int], ask: set[int]) -> dict[int, Any]:
        """The members of ``ask`` that do not list exactly ``expect`` alive, with what each
        said (None: no answer)."""

    def example(self, expect: set[int], behind: dict[int, Any]) -> str:
        """What the first member behind lists, as ``"; e.g. ..."``, or ""."""


async def wait_converged(
    cluster: Looking,
    expect: set[int],
    timeout: float,
    progress: Callable[[int], None] | None = None,
    started: float | None = None,
) -> float:
    """Wait until every member in ``expect`` lists all of ``expect`` alive; seconds taken
    (since ``started``, a ``time.monotonic()``, when given). ``progress`` is told after each
    look how many do (rule 2)."""
    t0 = time.monotonic() if started is None else started
    pending = set(expect)
    while True:
        await cluster.require_running(expect)
        confirming = not pending
        behind = await cluster.behind(expect, pending or set(expect))
        pending = set(behind)
        count = len(expect) - len(behind)
        elapsed = time.monotonic() - t0
        if progress is not None:
            progress(count)
        if confirming and not pending:
            return elapsed
        if elapsed > timeout:
            n = len(expect)
            raise ClusterError(
                f"the cluster did not converge within {timeout:g}s: {count} of {n} "
                f"{cluster.noun} list all {n} alive{cluster.example(expect, behind)} (logs in "
                f"{cluster.record.directory})"
            )
        if pending:  # the last look comes at once (rule 3)
            await trio.sleep(max(0.25, len(expect) / 500))
