"""``python -m bench.idle.wakeups``: how often a SWIM member's tasks wake at rest, on real
loopback sockets and trio's real clock.

Two members (``swim.testing.serve_member``: ``open_swim`` with its TCP listener, as the tests run
them) join over TCP and converge, rest ``--settle`` seconds, then every task step trio runs is
counted for ``--window`` seconds (a ``trio.abc.Instrument``), by task, beside the datagrams the
members sent and received. Prints the figures and saves ``bench/results/idle_wakeups.json``. Never
pass/fail: ``tests/swim/test_driver_idle.py`` holds the bound (task steps per member-second at rest)
in virtual time, where no machine's speed can move it; this is the same figure as a busy or an idle
machine sees it.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import psutil
import trio
import trio.lowlevel

from swim import SwimConfig, SwimHandle, SwimStatistics
from swim.testing import serve_member

RESULTS = Path(__file__).resolve().parents[1] / "results" / "idle_wakeups.json"
GOAL = 15.0  # task steps a second per member at rest (the test's bound in virtual time)


class _Steps(trio.abc.Instrument):
    """Task steps trio runs, by task name: each is a wake-up of that task."""

    def __init__(self) -> None:
        self.by_task: Counter[str] = Counter()

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.by_task[task.name.rsplit(".", 1)[-1]] += 1


@asynccontextmanager
async def two_members(config: SwimConfig) -> AsyncIterator[list[SwimHandle]]:
    """Two converged members on loopback (TCP listeners included), in this trio run."""
    async with trio.open_nursery() as nursery:
        handles: list[SwimHandle] = []

        for i in range(2):
            seeds = [("127.0.0.1", handles[0].port)] if handles else []
            handles.append(await nursery.start(serve_member, config, i, seeds))
        with trio.fail_after(30):
            for h in handles:
                await h.wait_members(lambda ms: len(ms) == 2)
        yield handles
        nursery.cancel_scope.cancel()


def _packets(before: SwimStatistics, after: SwimStatistics) -> dict[str, int]:
    return {
        "sent": sum(after.sent_packets.values()) - sum(before.sent_packets.values()),
        "received": sum(after.recv_packets.values()) - sum(before.recv_packets.values()),
        "suspicions": after.suspicions - before.suspicions,
    }


async def measure(settle: float, window: float) -> dict[str, Any]:
    """Two members at rest: task steps over ``window`` seconds, after ``settle`` seconds."""
    async with two_members(SwimConfig()) as handles:
        await trio.sleep(settle)  # the join's gossip drains
        before = [h.statistics() for h in handles]
        steps = _Steps()
        trio.lowlevel.add_instrument(steps)
        try:
            t0 = trio.current_time()
            await trio.sleep(window)
            elapsed = trio.current_time() - t0
        finally:
            trio.lowlevel.remove_instrument(steps)
        after = [h.statistics() for h in handles]
    total = sum(steps.by_task.values())
    return {
        "elapsed_s": round(elapsed, 3),
        "task_steps": total,
        "steps_per_member_s": round(total / elapsed / 2, 2),
        "by_task": dict(steps.by_task.most_common()),
        "members": [_packets(b, a) for b, a in zip(before, after, strict=True)],
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        prog="python -m bench.idle.wakeups",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--window", type=float, default=10.0, help="seconds counted at rest")
    p.add_argument("--settle", type=float, default=2.0, help="seconds of rest before it")
    p.add_argument("--runs", type=int, default=3, help="windows, each with fresh members")
    p.add_argument("--out", default=str(RESULTS))
    args = p.parse_args(argv)
    runs = []
    for k in range(args.runs):
        run = trio.run(measure, args.settle, args.window)
        runs.append(run)
        print(
            f"run {k + 1}: {run['steps_per_member_s']:.2f} task steps a second per member "
            f"({run['by_task']}); packets {run['members']}",
            flush=True,
        )
    doc = {
        "benchmark": "idle_wakeups",
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {
            "cpus": psutil.cpu_count(),
            "python": platform.python_version(),
            "load_1m": round(psutil.getloadavg()[0], 2),
        },
        "settings": {"window_s": args.window, "settle_s": args.settle, "runs": args.runs},
        "goal_steps_per_member_s": GOAL,
        "runs": runs,
        "steps_per_member_s_max": max(r["steps_per_member_s"] for r in runs),
    }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(
        f"at rest: at most {doc['steps_per_member_s_max']:.2f} task steps a second per member "
        f"(goal < {GOAL:g}); saved to {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
