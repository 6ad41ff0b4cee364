"""``python -m tests.sim.history_of_a_seed SEED``: one whole-node simulator run, printed as JSON
(its events, forwards, workers and pools at the end), for the test that two runs of a seed in
two processes, each with its own hash seed, print the same."""

from __future__ import annotations

import json
import sys
from typing import Any

import trio

from cluster.sim import VirtualClock, open_whole_cluster


async def history(seed: int) -> dict[str, Any]:
    async with open_whole_cluster(4, seed=seed) as c:
        await trio.sleep(6)
        answers = [await c.request(0, "GET", f"/api/nodes/{i}/workers") for i in (1, 2, 3)]
        c.pause(3)
        answers.append(await c.request(0, "GET", "/api/nodes/3/workers"))
        c.kill(2)
        await trio.sleep(8)
        c.resume(3)
        await c.restart(2)
        await trio.sleep(10)
        return {
            "events": c.events(),
            "answers": answers,
            "workers": [c.node(i).runtime.workers.snapshot() for i in range(4)],
            "pools": [
                sorted(str(p.info.pool_id) for p in c.node(i).runtime.pools.all()) for i in range(4)
            ],
            "now": trio.current_time(),
        }


if __name__ == "__main__":
    print(json.dumps(trio.run(history, int(sys.argv[1]), clock=VirtualClock()), sort_keys=True))
