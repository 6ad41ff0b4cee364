"""What ``RpcPeers`` records of each call (``cluster.node.peers`` rule 3) where the whole-node
simulator's tests do not reach: a caller that gives up, a call still open, a refusal, and the
limit of the ring. The calls' transport is replaced (``_call``): the records are the subject.
(Cases first written on branch ``i47-forwards``, ported to main's record.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import trio
import trio.testing

from cluster.ground.errors import NotFound
from cluster.node.peers import FORWARDS_KEPT, RpcPeers
from cluster.rpc import Monitor


@dataclass(frozen=True)
class Peer:
    node_id: int
    host: str = "127.0.0.1"
    port: int = 1
    incarnation: int = 0
    state: str = "alive"


def peers_answering(answer: Any) -> RpcPeers:
    """An ``RpcPeers`` whose calls run ``answer(what)`` instead of the node RPC."""
    peers = RpcPeers()

    async def call(member: Any, request: Any, what: str, through_faults: bool) -> Any:
        return await answer(what)

    peers._call = call  # type: ignore[method-assign]
    return peers


async def test_a_caller_that_gives_up_leaves_a_cancelled_record_ended_when_it_did(
    autojump_clock: trio.testing.MockClock,
) -> None:
    async def silent(what: str) -> None:
        await trio.sleep_forever()

    peers = peers_answering(silent)
    t0 = trio.current_time()
    with trio.move_on_after(1.5):
        await peers.call(Peer(2), Monitor("workers"), "monitor 'workers'")
    (f,) = peers.forwards()
    assert (f.peer, f.what, f.outcome) == (2, "monitor 'workers'", "cancelled")
    assert f.end is not None
    assert f.end - t0 == pytest.approx(1.5)


async def test_a_call_still_open_is_listed_after_the_ended_ones_with_no_end() -> None:
    async def answer(what: str) -> str:
        if what == "slow":
            await trio.sleep_forever()
        return what

    peers = peers_answering(answer)
    assert await peers.call(Peer(1), Monitor("workers"), "quick") == "quick"
    async with trio.open_nursery() as nursery:
        nursery.start_soon(peers.call, Peer(3), Monitor("workers"), "slow")
        await trio.testing.wait_all_tasks_blocked()
        listed = peers.forwards()
        assert [(f.what, f.outcome, f.end is None) for f in listed] == [
            ("quick", "ok", False),
            ("slow", "open", True),
        ]
        nursery.cancel_scope.cancel()
    assert [f.outcome for f in peers.forwards()] == ["ok", "cancelled"]


async def test_a_peer_refusal_is_refused_and_the_error_still_reaches_the_caller() -> None:
    async def answer(what: str) -> None:
        raise NotFound("pool 9.9 not found")

    peers = peers_answering(answer)
    with pytest.raises(NotFound):
        await peers.call(Peer(2), Monitor("stats"), "pool_monitor")
    assert [f.outcome for f in peers.forwards()] == ["refused"]


async def test_the_ring_keeps_the_last_ended_calls_only() -> None:
    async def answer(what: str) -> str:
        return what

    peers = peers_answering(answer)
    for i in range(FORWARDS_KEPT + 5):
        await peers.call(Peer(1), Monitor("workers"), f"call {i}")
    kept = peers.forwards()
    assert len(kept) == FORWARDS_KEPT
    assert kept[0].what == "call 5"
    assert kept[-1].what == f"call {FORWARDS_KEPT + 4}"
