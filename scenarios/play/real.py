"""A scenario file on real node processes: a throwaway local cluster on free ports.

Rules:
1. The cluster is ``realcluster.RealBackend``'s, in ``<out>/cluster`` with the scenario's
   settings as the nodes' configuration file (``<out>/node.yaml``); logs and event logs stay
   there for inspection, and every process is ended and proved gone in a ``finally``,
   whatever happened.
2. The steps are played by the one engine (``engine``) on a ``Cluster`` over it, as a chaos
   test in real mode plays its calls: actions stamped on ``time.monotonic()``, the clock the
   nodes stamp their events with, every node's events read over HTTP.
3. A file's ``serf: M`` starts M real Serf agents beside the nodes (``realcluster`` rule 6),
   members ``nodes`` and up, whose views are looked at while the steps run.
"""

from __future__ import annotations

from pathlib import Path

import trio

import swim

from ..format.records import Scenario
from ..judge.trace import Trace
from .chaos import Cluster
from .engine import OnAction, Say, play
from .realcluster import RealBackend

__all__ = ["run_real"]


async def run_real(
    scenario: Scenario,
    out: Path,
    *,
    seed: int | None = None,
    on_action: OnAction | None = None,
    say: Say | None = None,
) -> Trace:
    """Play ``scenario`` on node processes under ``out/cluster``; the trace of the run.

    ``on_action`` hears each action as it is carried out; ``say`` gets the launch's lines."""
    config = swim.SwimConfig.from_mapping(scenario.swim)
    if say is not None:
        agents = f" and {scenario.serf} Serf agents" if scenario.serf else ""
        say(f"launching {scenario.nodes} node processes{agents} in {out / 'cluster'}")
    backend = await RealBackend.start(
        scenario.nodes,
        config,
        directory=out,
        name=scenario.name.replace(" ", "-")[:60] or "scenario",
        settings=dict(scenario.settings),
        serf=scenario.serf,
    )
    try:
        if say is not None:
            say(f"converged after {backend.t0 - backend.launched:.1f} s; steps start now")
        seed = scenario.seed if seed is None else seed
        members = scenario.nodes + scenario.serf
        c = Cluster(backend, members, seed, config, strict=False, agents=backend.agent_names())
        trace = await play(c, scenario, on_action=on_action, say=say)
        if say is not None:
            say("stopping the cluster")
        return trace
    finally:
        with trio.CancelScope(shield=True):
            await backend.aclose()
