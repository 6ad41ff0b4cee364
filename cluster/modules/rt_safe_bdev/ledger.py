"""The durability check of an array: checksummed writes, each recorded once acknowledged, and
a read-back of every one of them.

Rules:
1. ``write`` stores ``count`` records of ``size`` bytes drawn from ``seed``, each in an
   extent of its own; a record enters the ledger only once its write returned (acknowledged).
   A write that fails is counted, never recorded: only what was acknowledged must survive.
2. ``check`` reads every recorded extent back and compares its SHA-256: a record that reads
   differently, or cannot be read, is lost, and named (offset, size, why).
3. Bounded: at most ``MAX_RECORDS`` records in a ledger, ``MAX_RECORD`` bytes each.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from typing import Any

from cluster.ground.errors import ApiError, BadRequest
from cluster.storage import BlockStore, Extent

__all__ = ["MAX_RECORD", "MAX_RECORDS", "WriteLedger"]

MAX_RECORDS = 10_000
MAX_RECORD = 1 << 20


@dataclass
class WriteLedger:
    """The acknowledged writes of one array (rule 1)."""

    records: list[tuple[Extent, int, str]] = field(default_factory=list)  # extent, size, hash

    async def write(self, store: BlockStore, count: int, size: int, seed: int) -> dict[str, Any]:
        if not 1 <= size <= MAX_RECORD:
            raise BadRequest(f"size: 1 to {MAX_RECORD} bytes, not {size}")
        if not 1 <= count <= MAX_RECORDS - len(self.records):
            raise BadRequest(
                f"count: 1 to {MAX_RECORDS - len(self.records)} (the ledger holds "
                f"{len(self.records)} of {MAX_RECORDS}), not {count}"
            )
        rng = random.Random(seed)
        acknowledged = failed = 0
        for _ in range(count):
            blob = rng.randbytes(size)
            try:
                extent = await store.allocate(size)
                await store.write(extent.offset, blob)
            except ApiError:
                failed += 1
                continue
            self.records.append((extent, size, hashlib.sha256(blob).hexdigest()))
            acknowledged += 1
        return {"acknowledged": acknowledged, "failed": failed, "records": len(self.records)}

    async def check(self, store: BlockStore) -> dict[str, Any]:
        lost: list[dict[str, Any]] = []
        for extent, size, digest in self.records:
            try:
                got = hashlib.sha256(await store.read(extent.offset, size)).hexdigest()
                why = None if got == digest else "reads back different bytes"
            except ApiError as exc:
                why = f"unreadable: {exc.message}"
            if why:
                lost.append({"offset": extent.offset, "size": size, "why": why})
        return {"checked": len(self.records), "lost": lost[:100], "lost_count": len(lost)}
