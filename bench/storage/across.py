"""An array whose members live on other nodes, next to the same array on its own node.

Run: ``.venv/bin/python -m bench.storage.across`` (about a minute). Five real nodes on
loopback; array ``local`` on node 0 over three of its own rt_bdev pools, array ``remote`` on
node 0 over one pool on each of nodes 1 to 3 (2 data + 1 parity, 4 KiB chunks, unpaced
recovery). Prints a table and saves ``bench/results/storage_across.json``:

- recovery rate (MB/s of member bytes rebuilt over the run's own time) of a member replaced
  by a spare, on the array's node (local) and across the network (remote);
- read throughput of every record (the durability check, SHA-256 included) healthy and
  degraded (a member out of service: the data is decoded from parity);
- from a ``kill -9`` of a member's node to the array degraded, and to it recovered onto a
  spare on node 4 (``auto_replace_after_s`` 1).

Figures of one run on this machine, never a pass/fail.
"""

from __future__ import annotations

import json
import os
import platform
import time
from pathlib import Path
from typing import Any

import httpx
import trio

from scenarios import open_cluster

RESULTS = Path(__file__).resolve().parents[1] / "results" / "storage_across.json"
RECORDS, RECORD = 192, 256 * 1024  # 48 MiB of records per array
CAPACITY = "64M"
ARRAY = "max_failures: 1\nrecover_pace_s: 0\nchunk_size: 4096\n"


def call(method: str, url: str, **form: str) -> Any:
    r = httpx.request(method, url, data=form if method == "POST" else None,
                      params=form if method == "GET" else None, timeout=120)  # fmt: skip
    if r.status_code != 200:
        raise SystemExit(f"{method} {url}: {r.status_code} {r.text[:300]}")
    return r.json()


def stats(base: str, pool: str) -> Any:
    (answer,) = call("GET", f"{base}/api/pools/{pool}/monitor", query="stats")["results"].values()
    return answer


def wait(base: str, pool: str, until: Any, timeout: float = 120.0) -> tuple[float, Any]:
    """Seconds until ``until(stats)`` holds (polled every 20 ms), and those stats."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        s = stats(base, pool)
        if until(s):
            return time.monotonic() - t0, s
        time.sleep(0.02)
    raise SystemExit(f"pool {pool} never reached the state awaited")


def bdev(base: str, name: str, pool_id: str) -> None:
    call("POST", f"{base}/api/mod/rt_bdev/create", pool_name=name, pool_id=pool_id,
         bdev_type="ram", capacity=CAPACITY)  # fmt: skip


def array(base: str, name: str, pool_id: str, members: str, parity: str, more: str = "") -> None:
    config = f"members: {members}\nparity_members: {parity}\n{ARRAY}{more}"
    call("POST", f"{base}/api/pools/compose", mod_name="rt_safe_bdev", pool_name=name,
         pool_id=pool_id, config=config)  # fmt: skip


def durability(base: str, pool: str, **form: str) -> tuple[float, Any]:
    t0 = time.perf_counter()
    body = call("POST", f"{base}/api/mod/rt_safe_bdev/{pool}/durability", **form)
    return time.perf_counter() - t0, body


def measure(base: str, pool: str, spare: str, spare_node: int) -> dict[str, Any]:
    """Records written, read healthy, read degraded, then the member rebuilt onto ``spare``."""
    durability(base, pool, op="write", count=str(RECORDS), size=str(RECORD), seed="1")
    mb = RECORDS * RECORD / 1e6
    healthy_s, _ = durability(base, pool, op="check")
    victim = stats(base, pool)["members"][0]["pool_id"]
    call("POST", f"{base}/api/mod/rt_safe_bdev/{pool}/remove_member", member_pool_id=victim,
         was_faulty="1")  # fmt: skip
    degraded_s, check = durability(base, pool, op="check")
    assert check["lost_count"] == 0, check
    call("POST", f"{base}/api/mod/rt_safe_bdev/{pool}/replace_member", failed_pool_id=victim,
         member_name=spare, node_id=str(spare_node))  # fmt: skip
    _, done = wait(base, pool, lambda s: s["recovery_state"] == "complete")
    rebuilt = done["recovery_written_slots"] * 4096 / 1e6
    return {
        "read_healthy_mbps": round(mb / healthy_s, 1),
        "read_degraded_mbps": round(mb / degraded_s, 1),
        "recovery_mbps": round(rebuilt / done["recovery_elapsed_s"], 1),
        "recovery_s": done["recovery_elapsed_s"],
        "rebuilt_mb": round(rebuilt, 2),
    }


async def run() -> dict[str, Any]:
    async with open_cluster(5, mode="real", name="bench-across") as c:
        await c.wait_converged()
        urls = [c.dashboard_url(i) or "" for i in range(5)]
        for j, name in enumerate(("l1", "l2", "l3", "lspare")):
            bdev(urls[0], name, f"91{j}.0")
        for i in (1, 2, 3):
            bdev(urls[i], f"r{i}", f"92{i}.0")
        bdev(urls[1], "rspare", "929.0")
        array(urls[0], "local", "960.0", "l1,l2", "l3")
        array(urls[0], "remote", "961.0", "r1@1,r2@2", "r3@3")
        local = measure(urls[0], "960.0", "lspare", 0)
        remote = measure(urls[0], "961.0", "rspare", 1)
        # death to degraded and to recovered: a third array, node 3 killed
        for i in (1, 2, 3):
            bdev(urls[i], f"d{i}", f"93{i}.0")
        array(urls[0], "dies", "962.0", "d1@1,d2@2", "d3@3", "auto_replace_after_s: 1\n")
        durability(urls[0], "962.0", op="write", count="32", size=str(RECORD), seed="2")
        t0 = time.monotonic()
        await c.kill(3)
        wait(urls[0], "962.0", lambda s: s["faulty_members"] == 1)
        degraded_s = time.monotonic() - t0  # from the kill
        _, done = wait(urls[0], "962.0", lambda s: s["recovery_state"] == "complete"
                       and s["active_members"] == 3)  # fmt: skip
        recovered_s = time.monotonic() - t0
    return {
        "local": local,
        "remote": remote,
        "death": {
            "to_degraded_s": round(degraded_s, 2),
            "to_recovered_s": round(recovered_s, 2),
            "auto_replace_after_s": 1,
            "spare_on_node": done["members"][2]["node_id"],
        },
    }


def main() -> None:
    figures = trio.run(run)
    out = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "records": {"count": RECORDS, "bytes": RECORD},
        **figures,
    }
    print(f"{'':28}{'local':>10}{'remote':>10}")
    for key in ("read_healthy_mbps", "read_degraded_mbps", "recovery_mbps"):
        print(f"{key:28}{figures['local'][key]:>10}{figures['remote'][key]:>10}")
    d = figures["death"]
    print(f"kill -9 of a member's node: degraded after {d['to_degraded_s']} s, recovered "
          f"onto node {d['spare_on_node']} after {d['to_recovered_s']} s")  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=2) + "\n")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    main()
