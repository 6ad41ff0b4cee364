"""What ``chaos.Cluster`` needs of a cluster, whatever runs it: the ``Backend`` protocol.

One backend per mode: ``sim.SimBackend`` (swim's simulated network, virtual time),
``realcluster.RealBackend`` (node processes this host launched, or an ``rt_cluster up``
cluster it was handed) and ``attach.AttachedBackend`` (a running cluster named only by its
hostfile). A scenario file, explore and the Python API all play through ``Cluster`` over one of
them (``engine``).

Rules:
1. A backend carries out one operation per call and keeps no history: the ``Cluster`` records
   the actions, decides who is up, schedules a timed pause's resume and judges; the backend
   answers ``now`` (its trace clock, seconds), each observer's view and the membership events
   seen so far.
2. Views and events use one vocabulary (``trace.VIEW``): a member is ``alive``, ``suspect``,
   ``dead`` or ``left`` (``probe_failed`` is alive to everyone but the prober's own timer).
3. Time moves only through ``advance_to`` (virtual time in sim; a sleep on real processes), so
   one caller decides every moment an operation happens at.
4. A capability a backend lacks is said, never faked: ``http`` answers None where there are no
   dashboards (sim), a cluster that starts no process raises ``ClusterError`` on
   ``restart`` and ``add``, and the simulator, which runs no disks, on ``disk``.
5. ``aclose`` ends everything the backend started and proves it gone; it is called once,
   shielded from cancellation, however the test ended.
6. ``views_nowait`` answers only what is at hand without I/O: a wait that looks hundreds of
   times between two moves of virtual time then yields to trio once per look, not twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, Protocol

__all__ = ["MODES", "Backend", "HttpAnswer"]

MODES = ("real", "netns", "sim")  # what open_cluster runs on

HttpAnswer = tuple[int | None, float, str]  # status or None, seconds to the status line, error


class Backend(Protocol):
    """One running cluster: real processes or a simulated network (see ``chaos``)."""

    mode: str  # one of MODES, or "attached"
    launched: float  # trace clock: when the first node was started
    t0: float  # trace clock: when every node first listed every node alive
    directory: Path | None  # real: the cluster directory (logs, event logs); else None
    boots: dict[int, list[int]] | None  # sim: each node's boots in the order made
    restart_stops: bool  # a restart stops a running process first, as a step of its own
    transport: Any  # an httpx transport to the dashboards (whole sim: in memory); None: network

    def now(self) -> float:
        """The trace clock, seconds (virtual in sim)."""
        ...

    async def advance_to(self, t: float) -> None:
        """Let time pass until the trace clock reads ``t`` (rule 3; at once if it has)."""
        ...

    async def views(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        """Each observer's view ``{subject: state}``; None for one that did not answer."""
        ...

    def forwards(self) -> list[dict[str, Any]] | None:
        """Every call a node made to a peer (``cluster.node.peers`` rule 3), each with its
        ``node``; None where the nodes do not report theirs (processes, the membership sim)."""
        ...

    def views_nowait(self, observers: Sequence[int]) -> dict[int, dict[int, str] | None]:
        """``views`` without yielding, where they are at hand (sim); ``trio.WouldBlock``
        where asking takes I/O (rule 6)."""
        ...

    async def leader(self, observers: Sequence[int]) -> int | None:
        """The leader as the first of ``observers`` that names one sees it; None if none."""
        ...

    async def events(self) -> list[dict[str, Any]]:
        """Every membership event so far, in the event-log shape (``mono`` on the trace
        clock)."""
        ...

    def watching(self) -> AbstractAsyncContextManager[None]:
        """Read every node's events in the background while the block runs (a scenario's
        run; sim: nothing to read)."""
        ...

    def collection(self, t0: float) -> dict[str, Any] | None:
        """How the events were read (``collect``'s summary); None in sim."""
        ...

    async def prepare(self, kind: str, i: int) -> None:
        """Get ready for ``kind`` (kill, stop, pause, restart) on node ``i``, before it is
        stamped: real mode reads the node's events while it still answers."""
        ...

    async def kill(self, i: int) -> None: ...
    async def stop(self, i: int) -> None: ...
    async def pause(self, i: int) -> None: ...
    async def resume(self, i: int) -> None: ...
    async def restart(self, i: int) -> None: ...
    async def add(self, induct: bool = False) -> int: ...
    async def partition(self, groups: Sequence[Sequence[int]]) -> None: ...
    async def heal(self) -> None: ...
    async def loss(self, percent: float, nodes: Sequence[int]) -> None: ...
    async def delay(self, ms: float, nodes: Sequence[int]) -> None: ...

    async def cut(self, src: Sequence[int], dst: Sequence[int]) -> None:
        """Drop everything a node of ``src`` sends to a node of ``dst`` (one way)."""
        ...

    async def clock(self, i: int, offset: float, rate: float) -> None:
        """Node ``i``'s wall clock reads true + ``offset`` s and runs at ``rate``."""
        ...

    async def disk(self, i: int, pool: str, latency_ms: float, errors: float, full: bool) -> None:
        """Node ``i``'s device ``pool``: ``latency_ms`` per operation, ``errors`` percent of
        reads and writes failing, ``full`` refusing growth (rule 4: not in sim)."""
        ...

    async def http(self, i: int, method: str, path: str, timeout: float) -> HttpAnswer | None:
        """One request to node ``i``'s dashboard; None where there are none (rule 4)."""
        ...

    def dashboard_url(self, i: int) -> str | None: ...

    async def aclose(self) -> None: ...
