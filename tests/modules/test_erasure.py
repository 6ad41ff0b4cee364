"""The erasure code at library speed is the same code: parity byte for byte as the reference
(and as the arrays already on disk), whole-run encoding and rebuilding, the slot locks, and
whole-stripe reads that keep never-written slots zero."""

from __future__ import annotations

import hashlib
import itertools
import os
import random

import pytest
import trio
import trio.testing
from storage_helpers import make_array, member_ids

from cluster.modules.rt_bdev import BdevContainer
from cluster.runtime import Runtime
from cluster.storage import Codec, SlotLocks
from cluster.storage.erasure import gf_mul

SHAPES = [(1, 1), (2, 1), (3, 1), (3, 2), (4, 2), (6, 3), (8, 4)]

# SHA-256 (first 16 hex digits) of the parity blocks the pure-Python code wrote before numpy
# came in, for 4 KiB blocks from random.Random(f"{k}+{m}"): the format on disk.
GOLDEN = {
    (3, 1): ["5c2275a72c9996cd"],
    (4, 2): ["f6b21b447182d3d1", "fee73598d4b60108"],
    (6, 3): ["0cb3add98e3394ce", "7915411329b46aaa", "e76410bc13341876"],
    (8, 4): ["52baf89427cccdbc", "72cbc334cafea2e8", "1912413abd0ce99a", "8890044bbdbb21ff"],
}


def reference_parity(rows: list[tuple[int, ...]], data: list[bytes]) -> list[bytes]:
    """Parity byte by byte, straight from the definition (rule 1 of the module)."""
    out = []
    for row in rows:
        block = bytearray(len(data[0]))
        for c, d in zip(row, data, strict=True):
            for x, byte in enumerate(d):
                block[x] ^= gf_mul(c, byte)
        out.append(bytes(block))
    return out


@pytest.mark.parametrize(("k", "m"), list(GOLDEN))
def test_parity_is_the_format_on_disk(k: int, m: int) -> None:
    rng = random.Random(f"{k}+{m}")
    data = [rng.randbytes(4096) for _ in range(k)]
    parity = Codec(k, m).encode(data)
    assert [hashlib.sha256(p).hexdigest()[:16] for p in parity] == GOLDEN[(k, m)]


@pytest.mark.parametrize(("k", "m"), SHAPES)
def test_parity_matches_the_definition(k: int, m: int) -> None:
    rng = random.Random(k * 100 + m)
    codec = Codec(k, m)
    data = [rng.randbytes(97) for _ in range(k)]
    assert codec.encode(data) == reference_parity(codec.rows, data)
    assert codec.encode([bytes(97)] * k) == [bytes(97)] * m


@pytest.mark.parametrize(("k", "m"), SHAPES)
def test_encode_stripes_is_slot_by_slot_encoding(k: int, m: int) -> None:
    rng = random.Random(k * 7 + m)
    chunk, n = 256, 5
    buf = rng.randbytes(n * k * chunk)
    codec = Codec(k, m)
    payloads = [bytes(p) for p in codec.encode_stripes(memoryview(buf), chunk)]
    expected: list[bytes] = [b""] * (k + m)
    for s in range(n):
        data = [buf[(s * k + i) * chunk : (s * k + i + 1) * chunk] for i in range(k)]
        for p, block in enumerate(data + codec.encode(data)):
            expected[p] += block
    assert payloads == expected
    with pytest.raises(ValueError, match="whole stripes"):
        codec.encode_stripes(buf[:-1], chunk)


@pytest.mark.parametrize(("k", "m"), SHAPES)
def test_rebuild_of_whole_runs_is_byte_for_byte(k: int, m: int) -> None:
    rng = random.Random(k * 13 + m)
    codec = Codec(k, m)
    data = [rng.randbytes(3 * 4096) for _ in range(k)]  # a run of three 4 KiB slots
    stripe = data + codec.encode(data)
    for lost in itertools.combinations(range(k + m), m):
        blocks = [None if p in lost else memoryview(b) for p, b in enumerate(stripe)]
        rebuilt = codec.rebuild(blocks, list(lost))
        assert [bytes(b) for b in rebuilt] == [stripe[p] for p in lost], lost
        assert codec.recover_data(blocks) == data
    with pytest.raises(ValueError, match="readable"):
        codec.rebuild([None] * (m + 1) + stripe[m + 1 :], [0])


async def test_slot_runs_are_held_by_one_task_at_a_time() -> None:
    locks = SlotLocks()
    inside: set[int] = set()
    overlaps: list[int] = []

    async def hold(first: int, n: int) -> None:
        async with locks.hold_run(first, n):
            slots = set(range(first, first + n))
            overlaps.extend(inside & slots)
            inside.update(slots)
            # Held until every other task has tried for its run and is blocked (on a lock, or
            # done): a lock that let a task in would show as an overlap first.
            await trio.testing.wait_all_tasks_blocked()
            inside.difference_update(slots)

    async with trio.open_nursery() as nursery:
        for first, n in [(0, 8), (4, 8), (6, 1), (10, 4), (0, 20)]:
            nursery.start_soon(hold, first, n)
    assert overlaps == []
    assert locks._held == {}


async def test_whole_stripe_reads_keep_unwritten_slots_zero(runtime: Runtime) -> None:
    array = await make_array(runtime, 3, 1)
    inner = array.require_array()
    sb, chunk = inner.stripe_bytes, inner.chunk
    first, last = os.urandom(sb), os.urandom(sb + 100)
    await array.write(0, first)
    await array.write(5 * sb, last)
    member = runtime.pools.by_name(inner.member(1).pool_name)
    assert isinstance(member, BdevContainer)
    await member.write(inner.member(1).base + 3 * chunk, b"\xff" * chunk)  # stale bytes
    expected = first + bytes(4 * sb) + last + bytes(sb - 100)
    assert await array.read(0, 7 * sb) == expected
    assert await array.read(7, 7 * sb - 7) == expected[7:]
    await array.remove_member(member_ids(array, "data")[0], True)  # rebuilt, same bytes
    assert await array.read(0, 7 * sb) == expected
