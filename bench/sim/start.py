"""``python -m bench.sim.start``: what a mass start costs the simulated cluster, by how the
nodes are started: one node after another, or in waves that join at one moment (issue 42).

One node first, then ``--nodes`` - 1 added, ``--wave`` at a time, ``--rate`` nodes a second
of virtual time (a wave every ``wave / rate`` s), each joining through its hostfile as real
nodes do; then the network runs until every node lists every other alive. Printed (and with
``--out``, saved as JSON), each a figure of virtual time, so the same on any machine:

- ``converged_s``: from the first node to convergence;
- ``packets``: datagrams handed to members in all, and per member (mean, max): what the start
  costs in wake-ups on real nodes, where a packet costs a node 100-500 us of CPU;
- ``suspicions``: ``suspected`` events (every node runs: each is false);
- ``sizes``: the distinct cluster sizes a node passed through, one per instant (the Rapid
  paper's measure; ``bench.cluster`` counts the same on real nodes): median and max.

Nothing passes or fails. ``--nodes 1000``: about four minutes of one core.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from bench.cluster.figures import sizes_seen
from swim import SimNetwork, SwimConfig


def run(
    nodes: int, rate: float, wave: int, seed: int = 1, timeout: float = 600.0
) -> dict[str, Any]:
    t0 = time.monotonic()
    net = SimNetwork(1, SwimConfig.local(), seed=seed, bootstrap=False)
    net.run_for(1.0)
    added = 1
    while added < nodes:
        for _ in range(min(wave, nodes - added)):
            net.add()
            added += 1
        net.run_for(wave / rate)

    def converged() -> bool:
        ids = net.live_ids()
        return all(sum(m.state.value == "alive" for m in net.members(i)) == len(ids) for i in ids)

    ok = net.until(converged, timeout=timeout, step=1.0)
    recv = [sum(net.machine(i).counters.recv_packets.values()) for i in net.ids()]
    sizes = list(sizes_seen(net.events).values())
    return {
        "nodes": nodes,
        "rate": rate,
        "wave": wave,
        "converged": ok,
        "converged_s": round(net.now, 1),
        "packets": sum(recv),
        "packets_per_member_mean": round(statistics.fmean(recv)),
        "packets_per_member_max": max(recv),
        "suspicions": sum(e["new"] == "suspected" for e in net.events),
        "sizes_seen_median": statistics.median(sizes),
        "sizes_seen_max": max(sizes),
        "wall_s": round(time.monotonic() - t0, 1),
    }


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m bench.sim.start", description=__doc__.split("\n")[0]
    )
    ap.add_argument("--nodes", type=int, default=250)
    ap.add_argument("--rate", type=float, default=11.0, help="nodes a second (virtual)")
    ap.add_argument("--wave", type=int, default=1, help="nodes that join at one moment")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default="", help="save the figures here (JSON)")
    args = ap.parse_args(argv)
    if args.nodes < 2 or args.wave < 1 or args.rate <= 0:
        ap.error("--nodes at least 2, --wave at least 1, --rate above 0")
    row = run(args.nodes, args.rate, args.wave, args.seed)
    print(json.dumps(row))
    if args.out:
        with open(args.out, "w") as f:
            f.write(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
