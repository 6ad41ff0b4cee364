"""Throughput of the storage modules next to the same operation done directly.

Run: ``.venv/bin/python -m bench.storage`` (about 25 s on a quiet machine). Each module figure
and its raw one are measured in alternating slices (``paired``), after a warm-up pass that
touches every page of both. Prints a table and saves
``bench/results/storage.json``. Every figure is MB/s (10^6 bytes per second) measured in this
run; ``ratio`` is module / raw. Rows with a goal (issue 17) show it and whether this run met
it; a figure, never a pass/fail of the command. The recovery rate is the bytes rebuilt over
the recovery run's own time (``recovery_elapsed_s``, unpaced: ``recover_pace_s`` 0), so the
wait for the next recover tick is not in it.
"""

from __future__ import annotations

import dataclasses
import json
import os
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from cluster.ground.settings import load_settings
from cluster.modules.rt_bdev import BdevContainer
from cluster.modules.rt_safe_bdev import SafeBdevContainer
from cluster.runtime import Runtime

BUDGET_S = 1.0  # seconds per measurement
ROUNDS = 5  # a module figure and its raw one are taken in this many alternating slices
RawOp = Callable[[int], None]
DEVICE = 64 << 20
RESULTS = Path(__file__).resolve().parents[1] / "results" / "storage.json"
# operation prefix -> (kind, value): a ratio to the raw figure, or MB/s
GOALS = {
    "bdev ram write 4 KiB": ("ratio", 0.2),
    "bdev ram read 4 KiB": ("ratio", 0.2),
    "array write 1 MiB": ("ratio", 0.3),
    "array recovery onto a used spare": ("mbps", 500.0),
}
LIBRARY = "numpy (XOR) + bytes.translate (GF(2^8) constant multiply), the Cauchy code unchanged"


def make_runtime(data_dir: Path) -> Runtime:
    s = load_settings("embedded", env={})
    s = dataclasses.replace(s, runtime=dataclasses.replace(s.runtime, data_dir=str(data_dir)))
    return Runtime(s, 0)


def timed_sync(block: int, op: Callable[[int], None], budget: float = BUDGET_S) -> float:
    """MB/s of ``op(offset)`` over ``block``-byte steps through the device, for ``budget`` s."""
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        op((done * block) % DEVICE)
        done += 1
    return done * block / (time.perf_counter() - t0) / 1e6


async def timed_async(
    block: int, op: Callable[[int], Awaitable[Any]], budget: float = BUDGET_S
) -> float:
    done, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < budget:
        await op((done * block) % DEVICE)
        done += 1
    return done * block / (time.perf_counter() - t0) / 1e6


async def paired(
    block: int, module: Callable[[int], Awaitable[Any]], raw: Callable[[int], None]
) -> tuple[float, float]:
    """(module, raw) MB/s, measured in ``ROUNDS`` alternating slices of ``BUDGET_S`` in all:
    on a busy machine both see the same load, so their ratio holds."""
    m = r = 0.0
    for _ in range(ROUNDS):
        m += await timed_async(block, module, BUDGET_S / ROUNDS)
        r += timed_sync(block, raw, BUDGET_S / ROUNDS)
    return m / ROUNDS, r / ROUNDS


@contextmanager
def raw_ops(kind: str, block: int, path: Path) -> Iterator[tuple[RawOp, RawOp]]:
    """(read, write) of a bytearray copy (``ram``) or pread/pwrite (``file``), every page
    touched first, like the device after its warm-up."""
    data = os.urandom(block)
    if kind == "ram":
        mem = bytearray(b"\1") * DEVICE
        view = memoryview(mem)

        def write(off: int) -> None:
            mem[off : off + block] = data

        def read(off: int) -> None:
            view[off : off + block].tobytes()

        yield read, write
        view.release()
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, bytes(DEVICE), 0)
        yield (
            lambda off: os.pread(fd, block, off) and None,
            lambda off: os.pwrite(fd, data, off) and None,
        )
    finally:
        os.close(fd)


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
            for offset in range(0, DEVICE, 1 << 20):  # warm-up: every page touched
                await dev.write(offset, bytes(1 << 20))
            with raw_ops(kind, block, tmp / f"raw_{name}.img") as (raw_r, raw_w):
                w, rw = await paired(block, lambda off, d=dev, b=data: d.write(off, b), raw_w)
                r, rr = await paired(block, lambda off, d=dev, n=block: d.read(off, n), raw_r)
            label = f"{block // 1024} KiB" if block < 1 << 20 else "1 MiB"
            what = ("bytearray copy", "bytearray copy") if kind == "ram" else ("pwrite", "pread")
            rows.append(row(f"bdev {kind} write {label}", w, rw, what[0]))
            rows.append(row(f"bdev {kind} read {label}", r, rr, what[1]))
            await runtime.destroy(str(dev.info.pool_id))
    return rows


async def bench_array(runtime: Runtime) -> list[dict[str, Any]]:
    """Writes after a warm-up pass (every member page touched once), then two recoveries of
    a data member: onto a spare device used before (the rebuild itself), and onto a new ram
    device (the rebuild plus the kernel's first touch of every page of the new device)."""
    member, block = 32 << 20, 1 << 20
    for i in range(3):
        await runtime.compose("rt_bdev", f"m{i}", f"86{i}.0", {"capacity": member})
    await runtime.compose(
        "rt_safe_bdev",
        "arr",
        "850.0",
        {"members": "m0,m1,m2", "max_failures": 1, "recover_pace_s": 0},
    )
    array = runtime.pools.by_name("arr")
    assert isinstance(array, SafeBdevContainer)
    data = os.urandom(block)
    capacity = array.capacity
    for offset in range(0, capacity, block):
        await array.write(offset, data[: min(block, capacity - offset)])
    mem = bytearray(b"\1") * capacity  # touched, like the members after the warm-up
    view = memoryview(mem)
    span = capacity - block

    def raw_write(off: int) -> None:
        mem[off % span : off % span + block] = data

    def raw_read(off: int) -> None:
        view[off % span : off % span + block].tobytes()

    write, raw = await paired(block, lambda off: array.write(off % span, data), raw_write)
    read, raw_r = await paired(block, lambda off: array.read(off % span, block), raw_read)
    rows = [row("array write 1 MiB (3+1 XOR)", write, raw, "bytearray copy")]
    rows.append(row("array read 1 MiB (3+1 XOR)", read, raw_r, "bytearray copy"))
    await runtime.compose("rt_bdev", "spare", "869.0", {"capacity": member})
    spare = runtime.pools.by_name("spare")
    assert isinstance(spare, BdevContainer)
    for offset in range(0, member, block):
        await spare.write(offset, data)
    for name, what in (("spare", "onto a used spare"), ("new", "onto a new ram device")):
        rate, rebuilt = await _recover_one(array, name, member)
        label = f"array recovery {what} ({rebuilt >> 20} MiB)"
        rows.append(row(label, rate, raw, "bytearray copy"))
    return rows


async def _recover_one(array: SafeBdevContainer, name: str, member: int) -> tuple[float, int]:
    """Fail data member 0, replace it by device ``name``: (MB/s over the run, bytes)."""
    victim = array.stats()["members"][0]["pool_id"]
    await array.remove_member(victim, True)
    await array.replace_member(victim, _req(name, member))
    await array.wait_recovered(poll_s=0.001)
    stats = array.stats()
    rebuilt = stats["recovery_ops_completed"] * array.chunk
    return rebuilt / max(stats["recovery_elapsed_s"], 1e-3) / 1e6, rebuilt


def _req(name: str, capacity: int) -> Any:
    from cluster.modules.members import MemberRequest

    return MemberRequest(name, str(capacity), "ram")


def row(what: str, mbps: float, raw: float, raw_what: str) -> dict[str, Any]:
    ratio = round(mbps / raw, 4) if raw else None
    out: dict[str, Any] = {
        "operation": what,
        "mbps": round(mbps, 1),
        "raw_mbps": round(raw, 1),
        "raw": raw_what,
        "ratio": ratio,
    }
    goal = next((g for prefix, g in GOALS.items() if what.startswith(prefix)), None)
    if goal is not None:
        kind, value = goal
        got = ratio if kind == "ratio" else mbps
        out["goal"] = f"{kind} >= {value:g}"
        out["goal_met"] = got is not None and got >= value
    return out


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
    saved = {"unit": "MB/s (1e6 bytes/s)", "erasure_library": LIBRARY, "results": rows}
    RESULTS.write_text(json.dumps(saved, indent=2) + "\n")
    print(f"erasure coding: {LIBRARY}")
    print(f"{'operation':36} {'MB/s':>9} {'raw MB/s':>9} {'ratio':>7}  {'goal':15} {'met':4} raw")
    for r in rows:
        figures = f"{r['mbps']:>9.1f} {r['raw_mbps']:>9.1f} {r['ratio']:>7.4f}"
        met = {True: "yes", False: "NO"}.get(r.get("goal_met"), "")  # type: ignore[call-overload]
        print(f"{r['operation']:36} {figures}  {r.get('goal', ''):15} {met:4} {r['raw']}")
    print(f"saved {RESULTS}")


if __name__ == "__main__":
    trio.run(main)
