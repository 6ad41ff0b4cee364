"""Real membership processes for the slow swim tests: ``python -m swim.testing`` members
started through the one process harness."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from tests.support import Child, Harness, wait_for_async

SLOW = 180  # seconds: generous, a loaded machine imports slowly


async def start_member(
    harness: Harness, i: int, seeds: list[str], config: Mapping[str, Any]
) -> tuple[Child, int]:
    """Start member i with ``config``; wait for its READY line; the member and its TCP port."""
    argv = [sys.executable, "-m", "swim.testing", "--id", str(i), "--port", "0",
            "--event-log", str(harness.workdir / f"events-{i}.jsonl"),
            "--config", json.dumps(dict(config))]  # fmt: skip
    for s in seeds:
        argv += ["--seed", s]
    member = harness.start(argv, f"member-{i}")
    ready = await wait_for_async(
        f"member {i} to print READY",
        lambda: harness.log_match(member, rf"READY {i} \S+ (\d+)"),
        timeout=SLOW,
    )
    return member, int(ready.group(1))
