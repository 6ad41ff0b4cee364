"""``python -m bench.wholesim``: how fast the whole-node simulator runs a cluster with an array.

Issue 47's goal: a 4-node run with an array and 60 virtual seconds of writes simulates at least
5x real time. Each figure comes from a fresh child process (``--one``):

- ``writes``: 4 whole nodes (``cluster.sim``), an erasure-coded array on node 0 with data
  members on nodes 1 and 2 and a parity member on node 3 (``rt_bdev`` RAM pools, as a
  scenario's ``storage:`` section makes them), then ``--virtual`` seconds of writes: every
  ``--every`` seconds the owner writes ``--records`` records of 8 KiB through its dashboard's
  ``durability`` route (the app, in memory), then reads every one back. Figures: virtual
  seconds per wall second and per CPU second, writes acknowledged, records read back and lost.
- ``kill``: the same with node 2 killed a third of the way in and restarted at two thirds (a
  member away, then resynchronised), the costlier case.
- ``idle``: the 4 nodes with no array and no write: what the nodes alone cost.

Prints a table and saves ``bench/results/wholesim.json``. Figures only: nothing passes or fails.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parents[1] / "results"
CASES = ("idle", "writes", "kill")
ARRAY = "950.0"


async def _array(c: Any) -> None:
    for k, node in enumerate((1, 2, 3)):
        form = {
            "pool_name": f"rt_m{node}",
            "pool_id": f"{951 + k}.0",
            "bdev_type": "ram",
            "capacity": "64MiB",
        }
        status, body = await c.request(node, "POST", "/api/mod/rt_bdev/create", data=form)
        assert status == 200, body
    config = (
        "members: rt_m1@1,rt_m2@2\nparity_members: rt_m3@3\nmax_failures: 1\nrecover_pace_s: 0\n"
    )
    form = {"mod_name": "rt_safe_bdev", "pool_name": "rt_array", "pool_id": ARRAY, "config": config}
    status, body = await c.request(0, "POST", "/api/pools/compose", data=form)
    assert status == 200, body


async def _case(case: str, virtual: float, every: float, records: int) -> dict[str, Any]:
    import trio

    from cluster.sim import open_whole_cluster

    route = f"/api/mod/rt_safe_bdev/{ARRAY}/durability"
    out: dict[str, Any] = {"sent": 0, "acknowledged": 0, "failed": 0}
    async with open_whole_cluster(4, seed=47) as c:
        await trio.sleep(3)  # joined
        if case != "idle":
            await _array(c)
        start = trio.current_time()
        while trio.current_time() - start < virtual:
            at = trio.current_time() - start
            if case == "kill" and c.up(2) and virtual / 3 <= at < 2 * virtual / 3:
                c.kill(2)
            if case == "kill" and not c.up(2) and at >= 2 * virtual / 3:
                await c.restart(2)
            if case != "idle":
                form = {
                    "op": "write",
                    "count": str(records),
                    "size": "8192",
                    "seed": str(out["sent"] + 1),
                }
                out["sent"] += 1
                status, _ = await c.request(0, "POST", route, data=form)
                out["acknowledged" if status == 200 else "failed"] += 1
            await trio.sleep_until(start + at + every)
        if case != "idle":
            status, body = await c.request(0, "POST", route, data={"op": "check"}, timeout=60)
            out["check"] = (
                {k: body.get(k) for k in ("checked", "lost_count")} if status == 200 else body
            )
        out["virtual_s"] = round(trio.current_time(), 3)
    return out


def one(case: str, virtual: float, every: float, records: int) -> dict[str, Any]:
    import trio

    from cluster.sim import VirtualClock

    wall0, cpu0 = time.perf_counter(), time.process_time()
    out = trio.run(_case, case, virtual, every, records, clock=VirtualClock())
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return {
        "case": case,
        **out,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "virtual_per_wall_s": round(out["virtual_s"] / wall, 1),
        "virtual_per_cpu_s": round(out["virtual_s"] / cpu, 1),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.wholesim", description=__doc__.split("\n")[0])
    p.add_argument("--virtual", type=float, default=60.0, help="virtual seconds of writes")
    p.add_argument("--every", type=float, default=0.2, help="seconds between two writes")
    p.add_argument("--records", type=int, default=4, help="records a write asks for")
    p.add_argument("--one", choices=CASES, help=argparse.SUPPRESS)
    p.add_argument("--no-save", action="store_true", help="print only")
    a = p.parse_args(argv)
    if a.one:
        print(json.dumps(one(a.one, a.virtual, a.every, a.records)))
        return 0
    rows = []
    for case in CASES:
        cmd = [
            sys.executable,
            "-m",
            "bench.wholesim",
            "--one",
            case,
            "--virtual",
            str(a.virtual),
            "--every",
            str(a.every),
            "--records",
            str(a.records),
        ]
        rows.append(
            json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        )
        r = rows[-1]
        print(
            f"{case:7} {r['virtual_s']:7.1f} virtual s in {r['wall_s']:6.2f} s wall "
            f"({r['virtual_per_wall_s']}x wall, {r['virtual_per_cpu_s']}x CPU), "
            f"{r['acknowledged']}/{r['sent']} writes, check {r.get('check')}, "
            f"{r['peak_rss_mib']} MiB"
        )
    if not a.no_save:
        RESULTS.mkdir(exist_ok=True)
        doc = {
            "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "machine": platform.machine(),
            "python": platform.python_version(),
            "goal": "4 nodes, an array, 60 virtual s of writes: >= 5x real time",
            "virtual": a.virtual,
            "every": a.every,
            "records": a.records,
            "rows": rows,
        }
        (RESULTS / "wholesim.json").write_text(json.dumps(doc, indent=2) + "\n")
    return 0
