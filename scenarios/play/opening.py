"""Opening a cluster for a chaos test: the mode chooses the ``Backend``, the cluster converges,
and ``opened`` hears of it (``chaos`` rules 1 and 7).

Usage::

    async with open_cluster(3, mode="sim", seed=7) as c:
        await c.kill(2)

Rules:
1. ``mode`` ``"sim"`` is the membership simulator (``simcluster``: machines only, 10,000
   nodes, every explore run), unless ``whole=True``: whole nodes (``wholesim``: runtime,
   modules, node RPC, dashboards, arrays) in the run's ``cluster.sim.VirtualClock``.
2. ``"real"`` and ``"netns"`` are node processes (``realcluster``), loaded only when asked for.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from swim import SwimConfig

from ..format.records import MAX_AGENTS
from .backend import MODES, Backend
from .chaos import Cluster
from .opened import seen
from .simcluster import SimBackend

__all__ = ["open_cluster", "start_cluster"]


async def start_cluster(
    n: int,
    mode: str = "sim",
    *,
    seed: int | None = None,
    swim: SwimConfig | Mapping[str, Any] | None = None,
    directory: Path | None = None,
    name: str | None = None,
    serf: int = 0,
    whole: bool = False,
) -> Cluster:
    """Start ``n`` nodes and return once they have converged; the caller owns it and must
    ``aclose`` it (``open_cluster`` does). ``directory``/``name``: real mode's cluster
    directory and name (default a fresh temporary one); ``serf``: see ``open_cluster``."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    if not 1 <= n <= 1024:
        raise ValueError(f"a cluster has 1..1024 nodes, not {n}")
    if serf and (mode != "real" or not 0 < serf <= MAX_AGENTS):
        raise ValueError(
            f"Serf agents (1..{MAX_AGENTS}) run in mode 'real' only, not {serf} in {mode!r}"
        )
    config = swim if isinstance(swim, SwimConfig) else SwimConfig.from_mapping(dict(swim or {}))
    seed = secrets.randbelow(2**31) if seed is None else seed
    backend: Backend
    agents: dict[int, str] = {}
    if mode == "sim" and whole:
        from .wholesim import WholeSimBackend  # whole nodes only when asked for

        given = swim.as_dict() if isinstance(swim, SwimConfig) else dict(swim or {})
        backend = await WholeSimBackend.start(n, seed, given)
    elif mode == "sim":
        backend = await SimBackend.start(n, config, seed)
    else:
        from .realcluster import RealBackend  # processes only when asked for

        real = await RealBackend.start(
            n, config, directory=directory, name=name, namespaces=mode == "netns", serf=serf
        )
        backend, agents = real, real.agent_names()
    c = Cluster(backend, n + serf, seed, config, agents=agents)
    seen(c)  # the pytest plugin's record of the test's clusters (``opened``)
    return c


@asynccontextmanager
async def open_cluster(
    n: int,
    mode: str = "sim",
    *,
    seed: int | None = None,
    swim: SwimConfig | Mapping[str, Any] | None = None,
    directory: Path | None = None,
    name: str | None = None,
    serf: int = 0,
    whole: bool = False,
) -> AsyncIterator[Cluster]:
    """``n`` nodes (``mode``: ``"sim"``, ``"real"`` or ``"netns"``), converged, ended on exit
    (rule 1).

    ``seed``: the simulation's seed (default a random one; ``c.seed`` says which);
    ``swim``: ``SwimConfig`` or its fields as a mapping (seconds); ``serf``: that many real
    Serf agents beside the nodes (mode ``"real"``; the nodes then speak memberlist), members
    ``n`` and up, whose views come from ``serf members``; ``whole`` (sim): whole nodes, with
    their runtime, modules, RPC, dashboards and arrays, in the run's ``VirtualClock``
    (``wholesim``)."""
    c = await start_cluster(
        n, mode, seed=seed, swim=swim, directory=directory, name=name, serf=serf, whole=whole
    )
    try:
        yield c
    finally:
        await c.aclose()
