"""What ``chaos.Cluster`` needs of a cluster, whatever runs it: the ``Backend`` protocol.

Rules:
1. A backend carries out one operation per call and keeps no history: the ``Cluster`` records
   the actions, decides who is up and judges; the backend answers ``now`` (its trace clock,
   seconds), each observer's view and the membership events seen so far.
2. Views and events use one vocabulary (``VIEW``): a member is ``alive``, ``suspect``,
   ``dead`` or ``left`` (``probe_failed`` is alive to everyone but the prober's own timer).
3. ``aclose`` ends everything the backend started and proves it gone; it is called once,
   shielded from cancellation, however the test ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

__all__ = ["MODES", "VIEW", "Backend", "view_name"]

MODES = ("real", "netns", "sim")  # what open_cluster runs on

VIEW = {
    "alive": "alive",
    "probe_failed": "alive",
    "suspected": "suspect",
    "suspect": "suspect",
    "dead": "dead",
    "left": "left",
}


def view_name(state: str | None) -> str | None:
    """A machine's member state in the API's words (rule 2); None stays None."""
    return None if state is None else VIEW.get(state, state)


class Backend(Protocol):
    """One running cluster: real processes or a simulated network (see ``chaos``)."""

    mode: str  # one of MODES
    launched: float  # trace clock: when the first node was started
    t0: float  # trace clock: when every node first listed every node alive
    directory: Path | None  # real: the cluster directory (logs, event logs); sim: None

    def now(self) -> float:
        """The trace clock, seconds (virtual in sim)."""
        ...

    async def advance(self, seconds: float) -> None:
        """Let ``seconds`` pass (virtual time in sim)."""
        ...

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        """Each observer's view ``{subject: state}``; None for one that did not answer."""
        ...

    async def events(self) -> list[dict[str, Any]]:
        """Every membership event so far, in the event-log shape (``mono`` on the trace
        clock)."""
        ...

    async def prepare(self, kind: str, i: int) -> None:
        """Get ready for ``kind`` (kill, pause, restart) on node ``i``, before it is stamped:
        real mode reads the node's events while it still answers."""
        ...

    async def kill(self, i: int) -> None: ...
    async def pause(self, i: int) -> None: ...
    async def resume(self, i: int) -> None: ...
    async def restart(self, i: int) -> None: ...
    async def add(self) -> int: ...
    async def partition(self, groups: Sequence[Sequence[int]]) -> None: ...
    async def heal(self) -> None: ...
    async def loss(self, percent: float, nodes: Sequence[int]) -> None: ...
    async def delay(self, ms: float, nodes: Sequence[int]) -> None: ...

    def dashboard_url(self, i: int) -> str | None: ...

    async def aclose(self) -> None: ...
