"""``python -m bench.idle.allocations``: what one node holds in its Python heap, by where it was
allocated (issue 33, "memory per object kind"), and its memory as the kernel counts it.

One node runs in a child process of its own (``cluster.node.open_node``, the daemon's settings:
dashboard on, workload off, a one-node cluster), with ``tracemalloc`` on from before the
project is imported, so every allocation of the node's own start is traced. After
``--settle`` seconds at rest the child takes one snapshot and reads its own
``/proc/self/smaps_rollup``; the parent prints the biggest holders by module (``--by file``)
or by line (``--by line``) and saves ``bench/results/allocations.json``.

Read it with care: tracemalloc's own bookkeeping makes the process larger than a node is
without it (the RSS here is not the RSS of ``bench.idle``), and this node is not forked from
the zygote, so nothing of its heap is shared. The figures say where the bytes of one node's
heap come from; ``bench.idle`` says what a node costs. Nothing here passes or fails.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "bench" / "results" / "allocations.json"
CHILD = r"""
import json, sys, tracemalloc
tracemalloc.start(1)
import trio
from cluster.ground.settings import load_settings
from cluster.node.process import open_node
from dataclasses import replace

async def main(settle, by, top):
    s = load_settings("daemon", flags={"port": 0, "viz_port": 0}, env={})
    s = replace(s, workload=replace(s.workload, enabled=False))
    async with open_node(s) as node:
        await trio.sleep(settle)
        snap = tracemalloc.take_snapshot().filter_traces(
            [tracemalloc.Filter(False, tracemalloc.__file__)]
        )
        stats = snap.statistics("filename" if by == "file" else "lineno")
        rollup = {}
        for line in open("/proc/self/smaps_rollup"):
            parts = line.split()
            if len(parts) >= 3 and parts[-1] == "kB":
                rollup[parts[0].rstrip(":")] = int(parts[1])
        rows = [
            {"where": str(st.traceback), "kib": round(st.size / 1024, 1), "blocks": st.count}
            for st in stats[:top]
        ]
        total = sum(st.size for st in stats)
        print(json.dumps({"traced_kib": round(total / 1024, 1), "top": rows, "smaps_kib": rollup}))
        node.request_stop()

trio.run(main, float(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
"""


def measure(settle: float, by: str, top: int) -> dict[str, Any]:
    """Run the child (rule of the module docstring) and return what it printed."""
    home = tempfile.mkdtemp(prefix="bench-allocations-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("RT_")}
    env |= {"HOME": home, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(settle), by, str(top)],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=settle + 120,
        check=False,
    )
    lines = [ln for ln in done.stdout.splitlines() if ln.startswith("{")]
    if done.returncode != 0 or not lines:
        raise SystemExit(f"the node's child failed ({done.returncode}):\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--settle", type=float, default=10.0, help="seconds at rest first")
    parser.add_argument("--by", choices=("file", "line"), default="file")
    parser.add_argument("--top", type=int, default=30)
    args = parser.parse_args()
    got = measure(args.settle, args.by, args.top)
    root = str(ROOT) + "/"
    print(f"traced Python heap: {got['traced_kib'] / 1024:.1f} MiB")
    smaps = got["smaps_kib"]
    rss, pss = smaps.get("Rss", 0) / 1024, smaps.get("Pss", 0) / 1024
    private = (smaps.get("Private_Clean", 0) + smaps.get("Private_Dirty", 0)) / 1024
    print(
        f"kernel: RSS {rss:.1f} MiB, PSS {pss:.1f} MiB, private {private:.1f} MiB "
        "(tracemalloc included)"
    )
    for row in got["top"]:
        where = row["where"].replace(root, "").replace(sys.prefix + "/", "")
        print(f"{row['kib']:>9.1f} KiB {row['blocks']:>8} blocks  {where}")
    got["when"] = time.strftime("%Y-%m-%d %H:%M:%S")
    got["by"] = args.by
    RESULTS.write_text(json.dumps(got, indent=2) + "\n")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
