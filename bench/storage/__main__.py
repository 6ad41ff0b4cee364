"""Throughput of the storage modules next to the same operation done directly.

Run: ``.venv/bin/python -m bench.storage``. Prints a table and saves
``bench/results/storage.json``. Every figure is MB/s (10^6 bytes per second) measured in this
run; ``ratio`` is module / raw. Figures, never a pass/fail.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import trio

from cluster.modules.rt_bdev import BdevContainer
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime
from cluster.settings import load_settings

BUDGET_S = 1.0  # seconds per measurement
DEVICE = 64 << 20
RESULTS = Path(__file__).resolve().parents[1] / "results" / "storage.json"


def make_runtime(data_dir: Path) -> Runtime:
    s = load_settings("embedded", env={})
    s = dataclasses.replace(s, runtime=dataclasses.replace(s.runtime, data_dir=str(data_dir)))
    return Runtime(s, 0)


def timed_sync(block: int, op: Callable[[int], None]) -> float:
    """MB/s of ``op(offset)`` over ``block``-byte steps through the device, for BUDGET_S."""
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < BUDGET_S:
        op((done * block) % DEVICE)
        done += 1
    return done * block / (time.perf_counter() - t0) / 1e6


async def timed_async(block: int, op: Callable[[int], Awaitable[Any]]) -> float:
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < BUDGET_S:
        await op((done * block) % DEVICE)
        done += 1
    return done * block / (time.perf_counter() - t0) / 1e6


def raw_ops(kind: str, block: int, path: Path) -> tuple[float, float]:
    """(read, write) MB/s of a bytearray copy (``ram``) or pread/pwrite (``file``)."""
    data = os.urandom(block)
    if kind == "ram":
        mem = bytearray(DEVICE)

        def write(off: int) -> None:
            mem[off : off + block] = data

        view = memoryview(mem)

        def read(off: int) -> None:
            view[off : off + block].tobytes()

        return timed_sync(block, read), timed_sync(block, write)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    os.ftruncate(fd, DEVICE)
    try:
        w = timed_sync(block, lambda off: os.pwrite(fd, data, off) and None)
        r = timed_sync(block, lambda off: os.pread(fd, block, off) and None)
    finally:
        os.close(fd)
    return r, w


async def bench_bdevs(runtime: Runtime, tmp: Path) -> list[dict[str, Any]]:
    rows = []
    for kind in ("ram", "file"):
        for block in (4096, 1 << 20):
            name = f"{kind}_{block}"
            await runtime.compose(
                "rt_bdev",
                name,
                runtime.suggest_pool_id("rt_bdev"),
                {"bdev_type": kind, "capacity": DEVICE},
            )
            dev = runtime.pools.by_name(name)
            assert isinstance(dev, BdevContainer)
            data = os.urandom(block)
            w = await timed_async(block, lambda off, d=dev, b=data: d.write(off, b))
            r = await timed_async(block, lambda off, d=dev, n=block: d.read(off, n))
            raw_r, raw_w = raw_ops(kind, block, tmp / f"raw_{name}.img")
            label = f"{block // 1024} KiB" if block < 1 << 20 else "1 MiB"
            rows.append(
                row(
                    f"bdev {kind} write {label}",
                    w,
                    raw_w,
                    "bytearray copy" if kind == "ram" else "pwrite",
                )
            )
            rows.append(
                row(
                    f"bdev {kind} read {label}",
                    r,
                    raw_r,
                    "bytearray copy" if kind == "ram" else "pread",
                )
            )
            await runtime.destroy(str(dev.info.pool_id))
    return rows


async def bench_array(runtime: Runtime) -> list[dict[str, Any]]:
    member = 8 << 20
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"86{i}.0", {"capacity": member})
    await runtime.compose(
        "rt_safe_bdev", "arr", "850.0", {"members": "m0,m1,m2", "max_failures": 1}
    )
    array = runtime.pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    block = 1 << 20
    data = os.urandom(block)
    capacity = array.capacity
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < BUDGET_S or done * block < capacity:
        await array.write((done * block) % (capacity - block), data)
        done += 1
    write = done * block / (time.perf_counter() - t0) / 1e6
    mem = bytearray(capacity)
    raw = timed_sync(
        block,
        lambda off: mem.__setitem__(
            slice(off % (capacity - block), off % (capacity - block) + block), data
        ),
    )
    rows = [row("array write 1 MiB (3+1 XOR)", write, raw, "bytearray copy")]
    stats = array.stats()
    victim = stats["members"][0]["pool_id"]
    await array.remove_member(victim, True)
    t0 = time.perf_counter()
    await array.replace_member(victim, _req("fresh", member))
    await array.wait_recovered(poll_s=0.001)
    rebuilt = array.stats()["recovery_ops_completed"] * array.chunk
    rate = rebuilt / (time.perf_counter() - t0) / 1e6
    rows.append(row(f"array recovery ({rebuilt >> 20} MiB rebuilt)", rate, raw, "bytearray copy"))
    return rows


def _req(name: str, capacity: int) -> Any:
    from cluster.modules.members import MemberRequest

    return MemberRequest(name, str(capacity), "ram")


def row(what: str, mbps: float, raw: float, raw_what: str) -> dict[str, Any]:
    return {
        "operation": what,
        "mbps": round(mbps, 1),
        "raw_mbps": round(raw, 1),
        "raw": raw_what,
        "ratio": round(mbps / raw, 4) if raw else None,
    }


async def main() -> None:
    with tempfile.TemporaryDirectory() as tmpdir:
        tmp = Path(tmpdir)
        runtime = make_runtime(tmp / "data")
        async with trio.open_nursery() as nursery:
            await nursery.start(runtime.workers.serve)
            runtime.install_admin_pool()
            rows = await bench_bdevs(runtime, tmp)
            rows += await bench_array(runtime)
            nursery.cancel_scope.cancel()
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"unit": "MB/s (1e6 bytes/s)", "results": rows}, indent=2) + "\n")
    print(f"{'operation':42} {'MB/s':>10} {'raw MB/s':>10} {'ratio':>8}  raw")
    for r in rows:
        figures = f"{r['mbps']:>10.1f} {r['raw_mbps']:>10.1f} {r['ratio']:>8.4f}"
        print(f"{r['operation']:42} {figures}  {r['raw']}")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    trio.run(main)
