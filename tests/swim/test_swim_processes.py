"""Five real OS processes (``python -m swim.testing``) on loopback; one is ``kill -9``-ed."""

from __future__ import annotations

import json
import signal
from typing import Any

import pytest

from swim.testing import query
from tests.support import Child, Harness, wait_for_async
from tests.swim.members import SLOW, start_member

pytestmark = pytest.mark.slow

CONFIG = {
    "probe_interval": 0.3,
    "probe_timeout": 0.15,
    "gossip_interval": 0.05,
    "pushpull_interval": 3.0,
    "rejoin_interval": 2.0,
}


async def members_of(port: int) -> dict[int, str] | None:
    reply: Any = await query("127.0.0.1", port, {"k": "stats"}, timeout=5)
    if not isinstance(reply, dict) or not reply.get("ok"):
        return None
    return {int(row[0]): str(row[3]) for row in reply["members"]}


async def views_of(ports: list[int]) -> list[dict[int, str] | None]:
    return [await members_of(p) for p in ports]


async def test_five_processes_detect_a_kill(harness: Harness) -> None:
    members: list[Child] = []
    ports: list[int] = []
    for i in range(5):
        seeds = [f"127.0.0.1:{ports[0]}"] if ports else []
        member, port = await start_member(harness, i, seeds, CONFIG)
        members.append(member)
        ports.append(port)
    await wait_for_async(
        "all five to see five alive",
        lambda: views_of(ports),
        until=lambda views: all(v and len(v) == 5 and set(v.values()) == {"alive"} for v in views),
        timeout=SLOW,
        interval=0.2,
    )
    harness.signal(members[4], signal.SIGKILL)
    views = await wait_for_async(
        "the other four to see member 4 dead",
        lambda: views_of(ports[:4]),
        until=lambda views: all(v and v.get(4) == "dead" for v in views),
        timeout=SLOW,
        interval=0.2,
    )
    for v in views:
        assert v is not None
        assert all(v[j] == "alive" for j in range(4))
    for i in range(4):
        lines = (harness.workdir / f"events-{i}.jsonl").read_text().splitlines()
        assert any(
            json.loads(ln)["subject"] == 4 and json.loads(ln)["new"] == "dead" for ln in lines
        )
