"""What one exploring run with storage plays (``explore --storage``): an array and its writes
while the nodes that hold its members die, pause, restart and are cut off.

Rules:
1. A pure function of the run's seed and the search's options, as ``drawing.draw``.
2. The cluster is 4 to ``max(4, high)`` whole nodes (the whole-node simulator: runtime,
   modules, node RPC, SWIM). The array's owner is one node; two data members and one parity
   member sit on three others (a 2+1 array that survives one member away); the owner writes
   ``records`` records every ``every`` seconds from the start to the end of the run.
3. One to ``MAX_FAULTS`` faults, three in four of them on a member's node (the array's own
   failures), the rest anywhere: kill, pause (0.5 to 3 times the longest suspicion, so it
   often outlasts a death), restart (a killed node brought back, or a running one crashed and
   started again), a partition, a one-way cut, loss or delay, each from 2 s on and 1 to 12 s
   apart; at least two nodes keep running. A partition or a cut aimed at a member's node is
   on its path to the owner: the partition puts it on the side without the owner, the cut
   runs between the two, either way (a write then lies in the stream as on a real network).
4. The schedule ends with every node back: the final heal, then every killed node restarted;
   the run goes on ``drawing.STORAGE_SETTLE_S`` after it (``drawing.finish``), so the
   restarted nodes have joined and an array whose members all came back has had time to be
   healthy again (``array_recovers``). The membership properties' bounds (which stretch the
   probe interval by Lifeguard's worst case after a fault) would make a run ten times as
   long: a storage search judges the storage properties by default.
5. Clock faults and added nodes are not drawn: the whole-node simulator runs one clock, and
   an added node holds no member.
6. One member is struck at a time: a fault that would keep a member from the owner (its node
   killed, paused or restarted, partitioned or cut from the owner, lossy or slowed) is drawn
   only when no other member is away, or was in the last ``RESYNC_S`` seconds, and a fault
   that would keep more members than the parity level away at once (a partition, the owner
   lossy or slowed) is not drawn. Mild loss or delay (``MILD_LOSS`` percent, ``MILD_DELAY_MS``)
   keeps nobody away (a probe still answers within its timeout) and is drawn at any time: it
   only slows the array's calls. Two members away at once on a 2+1 array can lose a write
   acknowledged while one was away (a later write that reached one member only tears its
   stripe): that is the schedule's doing, not a bug, and the array's documented limit. A
   killed or restarted member node loses its RAM device; at most as many as the array has
   parity members are, and never the owner's node (the array lives in its process): such a
   kill or restart is drawn as a pause. A paused owner strikes no member while no other is
   away, but its calls to every member time out (array rule 8 keeps what that tears), so each
   is away until ``RESYNC_S`` after the pause.
7. Half the runs (``SPARE_SHARE``) replace a member away ``REPLACE_AFTER_S`` seconds onto a
   spare (the section's ``replace_after``): a member lost with its node's process comes back
   on another node, and ``array_recovers`` judges it too. Drawn last, so the rest of a run
   is what it was before spares were drawn.
8. Half the runs (``SLOW_SHARE``) slow the owner's network mildly from ``SLOW_AT`` to the
   final heal (``MILD_DELAY_MS``, rule 6): each of the array's calls then takes a round trip
   of a tenth of a second or so, so a write is still under way when a member comes back or
   goes away, as on a real network. Drawn after the rest, as spares are.
"""

from __future__ import annotations

import random
from typing import Any

from swim import SwimConfig
from swim.lifeguard import suspicion_bounds

from .drawing import MAX_FAULTS, Options, draw, finish

__all__ = ["STORAGE_KINDS", "draw_any", "draw_storage"]

SPARE_SHARE = 0.5  # rule 7
RESYNC_S = 10.0  # rule 6: seconds a member back from being away takes to be whole again
FOREVER = float("inf")  # a fault the final heal ends
SLOW_SHARE, SLOW_AT = 0.5, 1.0  # rule 8
MILD_LOSS, MILD_DELAY_MS = 10, 50  # rule 6: under SWIM's probe timeout and its indirect probes
REPLACE_AFTER_S = (3.0, 15.0)
STORAGE_KINDS = ("kill", "pause", "restart", "partition", "cut", "loss", "delay")


def draw_any(seed: int, options: Options) -> dict[str, Any]:
    """The mapping run ``seed`` plays: a storage schedule with ``options.storage``, else
    ``drawing.draw``'s."""
    return draw_storage(seed, options) if options.storage else draw(seed, options)


def draw_storage(seed: int, options: Options) -> dict[str, Any]:
    """The scenario mapping of storage run ``seed`` (rules 1-4)."""
    rng = random.Random(seed)
    n = rng.randint(4, max(4, options.high))
    nodes = list(range(n))
    rng.shuffle(nodes)
    owner, members, parity = nodes[0], sorted(nodes[1:3]), [nodes[3]]
    holders = [*members, *parity]
    config = SwimConfig()
    suspicion = suspicion_bounds(
        config.suspicion_mult, config.suspicion_max_timeout_mult, n, config.probe_interval
    )[1]
    kinds = [k for k in STORAGE_KINDS if k in options.faults and rng.random() < 0.6]
    kinds = kinds or [rng.choice([k for k in STORAGE_KINDS if k in options.faults] or ["kill"])]
    steps: list[dict[str, Any]] = []
    down: list[int] = []
    paused: dict[int, float] = {}
    lost: set[int] = set()  # member nodes killed or restarted: their RAM devices are gone
    away: dict[int, float] = {}  # member node -> until when it may be out of the array
    t = round(rng.uniform(2.0, 6.0), 3)
    for _ in range(rng.randint(1, MAX_FAULTS)):
        live = [i for i in range(n) if i not in down and i not in paused]
        targets = [i for i in holders if i in live] if rng.random() < 0.75 else live
        target = rng.choice(targets or live)
        kind = rng.choice(kinds)
        if kind in ("kill", "restart") and target == owner:
            kind = "pause"  # rule 6: the array lives in its owner's process
        if kind in ("kill", "pause") and len(live) <= 2:
            kind = "delay"
        if kind in ("kill", "restart") and target in holders and len(lost) >= len(parity):
            kind = "pause"  # rule 6: no more devices lost than the parity covers
        start = t
        if kind in ("kill", "pause", "restart"):
            made, hit, until = _process_step(rng, kind, t, target, down, suspicion)
        else:
            on_path = target in holders  # rule 3: a member's own link to the owner
            made, t, hit, until = _network_step(rng, kind, t, n, owner, target, config, on_path)
        hit = [h for h in hit if h in holders]
        busy = [h for h in holders if h not in hit and away.get(h, -1.0) + RESYNC_S > start]
        if len(hit) <= len(parity) and not busy:  # rule 6: one member struck at a time
            steps.extend(made)
            for h in holders if kind == "pause" and target == owner else hit:
                away[h] = max(away.get(h, 0.0), until)
            for step in made:
                if "kill" in step:
                    down.append(step["kill"])
                elif "pause" in step:
                    paused[step["pause"]] = step["at"] + step["for"]
                elif "restart" in step and step["restart"] in down:
                    down.remove(step["restart"])
            lost.update(h for h in hit if until == FOREVER and kind in ("kill", "restart"))
        t = round(t + rng.uniform(1.0, 12.0), 3)
    for until in paused.values():
        t = max(t, round(until + 0.5, 3))
    steps.append({"at": t, "heal": True, "name": "final"})
    steps.extend({"at": t, "restart": i} for i in sorted(down))
    section = _section(rng, owner, members, parity)
    if rng.random() < SLOW_SHARE:  # rule 8
        steps.insert(0, {"at": SLOW_AT, "delay": {"node": owner, "ms": MILD_DELAY_MS}})
    return finish(
        {
            "name": f"explore storage run {seed}",
            "nodes": n,
            "seed": seed,
            "workload": "off",
            "storage": section,
            "steps": steps,
        }
    )


def _process_step(
    rng: random.Random, kind: str, t: float, target: int, down: list[int], suspicion: float
) -> tuple[list[dict[str, Any]], list[int], float]:
    """A kill, a pause or a restart at ``t``: its step, the node it keeps from the array and
    until when (rule 6; a killed or restarted node's device is gone: ``FOREVER``)."""
    if kind == "kill":
        return [{"at": t, "kill": target}], [target], FOREVER
    if kind == "pause":
        dur = round(rng.uniform(0.5, 3.0) * suspicion, 3)
        return [{"at": t, "pause": target, "for": dur}], [target], t + dur
    i = rng.choice(down) if down and rng.random() < 0.6 else target
    return [{"at": t, "restart": i}], [] if i in down else [i], FOREVER  # down: lost already


def _network_step(
    rng: random.Random,
    kind: str,
    t: float,
    n: int,
    owner: int,
    target: int,
    config: SwimConfig,
    on_path: bool = False,
) -> tuple[list[dict[str, Any]], float, list[int], float]:
    """A partition, a cut, loss or delay at ``t``: its steps, the time after them, and the
    nodes it may keep from the owner until when (rule 6; ``FOREVER``: the final heal). With
    ``on_path`` (rule 3), a partition puts ``target`` on the far side, and a cut is between
    it and the owner, either way."""
    if kind == "partition":
        ids = [i for i in range(n) if i != target] if on_path else list(range(n))
        rng.shuffle(ids)
        cut = rng.randint(1, n - 1)
        if on_path:  # the target and the first cut - 1 of the others, apart from the rest
            ids = [target, *ids]
            cut = min(cut, ids.index(owner))
        made: list[dict[str, Any]] = [
            {"at": t, "partition": [sorted(ids[:cut]), sorted(ids[cut:])]}
        ]
        apart = ids[cut:] if owner in ids[:cut] else ids[:cut]
        if rng.random() >= 0.6:
            return made, t, apart, FOREVER
        t = round(t + rng.uniform(1.0, 1.5 * config.gossip_to_the_dead_time), 3)
        return [*made, {"at": t, "heal": True}], t, apart, t
    if kind == "cut":
        to = rng.choice([i for i in range(n) if i != target])
        if on_path:
            target, to = (owner, target) if rng.random() < 0.5 else (target, owner)
        apart = [to] if target == owner else [target] if to == owner else []
        return [{"at": t, "cut": {"from": [target], "to": [to]}}], t, apart, FOREVER
    if kind == "loss":
        fault = {"node": target, "percent": rng.choice([10, 30, 60])}
    else:
        fault = {"node": target, "ms": rng.choice([50, 200, 800])}
    if fault.get("percent") == MILD_LOSS or fault.get("ms") == MILD_DELAY_MS:
        return [{"at": t, kind: fault}], t, [], t  # rule 6: nobody is kept away
    apart = list(range(n)) if target == owner else [target]  # a slow owner: every member
    return [{"at": t, kind: fault}], t, apart, FOREVER


def _section(
    rng: random.Random, owner: int, members: list[int], parity: list[int]
) -> dict[str, Any]:
    """The run's ``storage:`` section: its writes (rule 2) and, in half the runs, its spares
    (rule 7), drawn after the steps."""
    every = rng.choice([0.2, 0.3, 0.5])
    storage: dict[str, Any] = {
        "array": owner,
        "members": members,
        "parity": parity,
        "capacity": "16M",
        "writes": {"every": every, "records": rng.randint(1, 4), "size": 4096},
    }
    if rng.random() < SPARE_SHARE:
        storage["replace_after"] = round(rng.uniform(*REPLACE_AFTER_S), 1)
    return storage
