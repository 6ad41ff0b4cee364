"""A scenario file on swim's simulated network, in virtual time: seeded, socket-free,
repeatable.

Rules:
1. The cluster is ``simcluster.SimBackend``'s (up to ``JOIN_LIMIT`` nodes it joins through its
   seeds, above it it starts converged; ``start`` chooses either way at any size), and the
   steps are played by the one engine (``engine``) on a ``Cluster`` over it, as a chaos test
   in sim plays its calls: stop is a graceful leave, HTTP steps are recorded as not
   applicable.
2. Same scenario and seed, same trace: nothing here reads a clock or global randomness.
3. ``run_sim`` is the door for code outside trio (it runs its own trio loop, on a
   ``cluster.sim.VirtualClock`` when the file needs whole nodes); inside trio, await
   ``play_sim``.
4. A file with a ``storage:`` section plays on whole nodes (``wholesim``: runtime, modules,
   node RPC, dashboards, arrays), where its array is made, written and checked as on real
   processes; the run's clock must then be a ``VirtualClock`` (``run_sim`` gives it one).
"""

from __future__ import annotations

from functools import partial

import trio

import swim

from ..format.records import Scenario
from ..judge.trace import Trace
from .backend import Backend
from .chaos import Cluster
from .engine import OnAction, play
from .simcluster import JOIN_LIMIT, JOIN_TIMEOUT, SimBackend, SimFailed

__all__ = ["JOIN_LIMIT", "JOIN_TIMEOUT", "SimFailed", "play_sim", "run_sim", "whole"]


async def play_sim(
    scenario: Scenario,
    *,
    seed: int | None = None,
    nodes: int | None = None,
    on_action: OnAction | None = None,
    start: str = "auto",
) -> Trace:
    """Play ``scenario`` on a SimNetwork; the trace of what happened (virtual seconds).

    ``on_action`` hears each action as it is carried out, with the start (``t0``);
    ``start``: ``"join"``, ``"bootstrap"`` or ``"auto"`` (rule 1)."""
    n = nodes or scenario.nodes
    seed = scenario.seed if seed is None else seed
    config = swim.SwimConfig.from_mapping(scenario.swim)
    backend: Backend
    if whole(scenario):  # rule 4
        from .wholesim import WholeSimBackend

        backend = await WholeSimBackend.start(n, seed, dict(scenario.swim))
    else:
        backend = await SimBackend.start(n, config, seed, start)
    c = Cluster(backend, n, seed, config, strict=False)
    try:
        return await play(c, scenario, on_action=on_action)
    finally:
        await c.backend.aclose()


def run_sim(
    scenario: Scenario,
    *,
    seed: int | None = None,
    nodes: int | None = None,
    on_action: OnAction | None = None,
    start: str = "auto",
) -> Trace:
    """``play_sim`` in a trio loop of its own (rule 3)."""
    clock = None
    if whole(scenario):
        from cluster.sim import VirtualClock  # whole nodes only when a file needs them

        clock = VirtualClock()
    return trio.run(
        partial(play_sim, scenario, seed=seed, nodes=nodes, on_action=on_action, start=start),
        clock=clock,
    )


def whole(scenario: Scenario) -> bool:
    """Rule 4: whether ``scenario`` plays on whole nodes."""
    return scenario.storage is not None
