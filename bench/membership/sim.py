"""Dissemination on the simulated network: rounds until every member knows of a death.

Two measurements:

- ``machine_run(n)``: N real SwimMachines on ``SimNetwork`` (bootstrap: everyone knows
  everyone), one member killed; the time from the first suspicion of it to the last survivor
  having heard (the rumour's spread), and from the first ``dead`` verdict to the last survivor
  holding it dead, in gossip rounds (GossipInterval) and protocol periods. The machines share
  one roster (``swim.table`` rule 4), so memory and build time grow as N, and it runs at
  N = 10000 too: that is the figure that stands for what users get.
- ``epidemic_run(n)``: the reduced variant, kept to compare with the machines: only
  the dissemination of one ``dead`` update with the machine's own rules (GossipNodes random
  targets per gossip round, each send spending one of RetransmitMult*ceil(log10(N+1))
  transmissions, re-gossiped by every member that learns it), without probes or piggybacking,
  so it is an upper bound on the rounds the full protocol needs.
"""

from __future__ import annotations

import math
import random
import time
from typing import Any

from swim import SimNetwork, SwimConfig
from swim.broadcast import retransmit_limit


def machine_run(n: int, config: SwimConfig, seed: int = 0) -> dict[str, Any]:
    wall0 = time.perf_counter()
    net = SimNetwork(n, config, seed=seed, record_events=False)
    victim = n - 1
    first_dead: dict[int, float] = {}
    heard: dict[int, float] = {}  # observer -> first suspect/dead of the victim
    false_dead = 0

    def on_event(e: dict[str, Any]) -> None:
        nonlocal false_dead
        if e["subject"] == victim and e["new"] in ("suspected", "dead"):
            heard.setdefault(e["observer"], e["mono"])
        if e["new"] == "dead":
            if e["subject"] == victim:
                first_dead.setdefault(e["observer"], e["mono"])
            else:
                false_dead += 1

    net.on_event = on_event
    net.run_for(2.0 * config.probe_interval)
    t_kill = net.now
    net.kill(victim)
    ok = net.until(lambda: len(first_dead) == n - 1, timeout=600.0, step=0.5)
    first, last = min(first_dead.values()), max(first_dead.values())
    h0, h1 = min(heard.values()), max(heard.values())
    return {
        "n": n,
        "complete": ok,
        "first_suspect_s": h0 - t_kill,
        "rumour_spread_s": h1 - h0,
        "rumour_gossip_rounds": (h1 - h0) / config.gossip_interval,
        "log10_n": math.log10(n),
        "first_dead_s": first - t_kill,
        "full_dead_s": last - t_kill,
        "spread_s": last - first,
        "spread_gossip_rounds": (last - first) / config.gossip_interval,
        "spread_periods": (last - first) / config.probe_interval,
        "false_dead": false_dead,
        "wall_s": time.perf_counter() - wall0,
        "packets": net.packets,
    }


def epidemic_run(n: int, config: SwimConfig, seed: int = 0) -> dict[str, Any]:
    rng = random.Random(seed)
    limit = retransmit_limit(config.retransmit_mult, n)
    sent = {0: 0}  # members that know -> transmissions spent
    rounds = 0
    while len(sent) < n and rounds < 10_000:
        rounds += 1
        newly: list[int] = []
        for member, count in list(sent.items()):
            for _ in range(config.gossip_nodes):
                if count >= limit:
                    break
                target = rng.randrange(n)
                count += 1
                if target not in sent:
                    newly.append(target)
            sent[member] = count
        for t in newly:
            sent.setdefault(t, 0)
        if all(c >= limit for c in sent.values()) and len(sent) < n:
            break  # the rumour died out before reaching everyone
    return {
        "n": n,
        "informed": len(sent) / n,
        "gossip_rounds": rounds,
        "ln_n": math.log(n),
        "log10_n": math.log10(n),
        "rounds_per_ln_n": rounds / math.log(n),
        "retransmit_limit": limit,
    }


def speed_run(n: int, config: SwimConfig, virtual_s: float = 60.0) -> dict[str, Any]:
    """How many protocol periods (summed over members) the simulator runs per wall second."""
    net = SimNetwork(n, config, seed=1, record_events=False)
    t0 = time.perf_counter()
    net.run_for(virtual_s)
    wall = time.perf_counter() - t0
    periods = n * virtual_s / config.probe_interval
    return {"n": n, "virtual_s": virtual_s, "wall_s": wall, "periods_per_wall_s": periods / wall}
