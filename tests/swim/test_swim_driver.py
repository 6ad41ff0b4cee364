"""The trio driver on real loopback sockets: up to five members in one trio run."""

from __future__ import annotations

import json
import random
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from swim import (
    FrameError,
    Member,
    MemberState,
    SwimConfig,
    SwimHandle,
    open_swim,
    recv_frame,
    send_frame,
)
from swim.testing import query, serve_member
from tests.support import wait_for_async

# Fast but not fragile: 0.2 s periods; timeouts below are generous multiples.
FAST = SwimConfig(
    probe_interval=0.2,
    probe_timeout=0.1,
    gossip_interval=0.05,
    pushpull_interval=2.0,
    rejoin_interval=1.0,
    gossip_to_the_dead_time=5.0,
    leave_propagate_time=0.3,
)


class Cluster(list[SwimHandle]):
    """Handles of running members, each in its own task so one can be killed alone."""

    def __init__(self) -> None:
        super().__init__()
        self.scopes: list[trio.CancelScope] = []

    def kill(self, i: int) -> None:
        """Stop member i at once: its sockets close and it falls silent, like a crash."""
        self.scopes[i].cancel()


async def run_member(
    config: SwimConfig,
    i: int,
    seeds: list[tuple[str, int]],
    log_path: Path,
    *,
    task_status: trio.TaskStatus[tuple[SwimHandle, trio.CancelScope]] = trio.TASK_STATUS_IGNORED,
) -> None:
    with trio.CancelScope() as scope:
        async with trio.open_nursery() as nursery:
            member = partial(serve_member, config, i, seeds, event_log=log_path)
            task_status.started((await nursery.start(member), scope))


@asynccontextmanager
async def cluster(n: int, tmp_path: Path, config: SwimConfig = FAST) -> AsyncIterator[Cluster]:
    """n members, each with its own TCP listener; member 0 is everybody's seed."""
    async with trio.open_nursery() as nursery:
        c = Cluster()
        seeds: list[tuple[str, int]] = []
        for i in range(n):
            h, scope = await nursery.start(
                run_member, config, i, seeds, tmp_path / f"events-{i}.jsonl"
            )
            c.append(h)
            c.scopes.append(scope)
            if i == 0:
                seeds = [("127.0.0.1", h.port)]
        yield c
        nursery.cancel_scope.cancel()


def states(h: SwimHandle) -> dict[int, MemberState]:
    return {m.node_id: m.state for m in h.members()}


async def wait_all(
    handles: list[SwimHandle], pred: Callable[[list[Member]], bool], timeout: float = 30.0
) -> None:
    with trio.fail_after(timeout):
        for h in handles:
            await h.wait_members(pred)


async def test_five_members_converge_and_detect_a_kill(tmp_path: Path) -> None:
    async with cluster(5, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 5 and all(m.state == "alive" for m in ms))
        assert {h.leader_id() for h in hs} == {0}
        # "kill" member 4: block it both ways on every member and silence it
        for h in hs[:4]:
            h.faults.block([4])
        hs[4].faults.block([0, 1, 2, 3])
        survivors = hs[:4]
        await wait_all(survivors, lambda ms: ms[4].state is MemberState.DEAD, timeout=60)
        for h in survivors:
            s = states(h)
            assert s[4] is MemberState.DEAD
            assert all(s[j] is MemberState.ALIVE for j in range(4))
        stats = hs[0].statistics()
        assert stats.sent_packets.get("ping", 0) > 0
        assert stats.recv_packets.get("ack", 0) > 0
        assert stats.dropped.get("blocked_out", 0) + stats.dropped.get("blocked_in", 0) > 0
        assert stats.loop_lag >= 0.0
        # heal: member 4 refutes and is alive everywhere again
        for h in hs:
            h.faults.heal()
        await wait_all(hs, lambda ms: all(m.state is MemberState.ALIVE for m in ms), timeout=60)
        assert hs[4].machine.me.incarnation >= 1
    lines = (tmp_path / "events-0.jsonl").read_text().splitlines()
    events = [json.loads(line) for line in lines]
    assert set(events[0]) == {
        "mono",
        "wall",
        "observer",
        "subject",
        "old",
        "new",
        "incarnation",
        "cause",
    }
    assert any(e["subject"] == 4 and e["new"] == "dead" for e in events)


async def test_real_kill_of_a_member(tmp_path: Path) -> None:
    """A member whose sockets close at once (a crash) is detected by every survivor."""
    async with cluster(4, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 4 and all(m.state == "alive" for m in ms))
        hs.kill(3)
        await wait_all(hs[:3], lambda ms: ms[3].state is MemberState.DEAD, timeout=60)


async def test_leave_is_seen_as_left(tmp_path: Path) -> None:
    async with cluster(3, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 3 and all(m.state == "alive" for m in ms))
        await hs[2].leave()
        await wait_all(hs[:2], lambda ms: ms[2].state is MemberState.LEFT, timeout=30)
        assert states(hs[2])[2] is MemberState.LEFT


async def test_induct_gets_next_free_id(tmp_path: Path) -> None:
    async with cluster(2, tmp_path) as hs, trio.open_nursery() as nursery:
        seed = ("127.0.0.1", hs[0].port)
        async with open_swim(
            FAST, node_id=None, host="127.0.0.1", port=0, seeds=[seed], induct=True
        ) as newbie:
            assert newbie.node_id == 2
            await wait_all([*hs, newbie], lambda ms: len(ms) == 3, timeout=30)
        nursery.cancel_scope.cancel()


async def test_node_id_none_without_induct_is_an_error() -> None:
    with pytest.raises(ValueError, match="induct"):
        async with open_swim(FAST, node_id=None, host="127.0.0.1", port=0):
            pass


async def test_garbage_udp_and_tcp_do_not_stop_the_member(tmp_path: Path) -> None:
    async with cluster(2, tmp_path) as hs:
        await wait_all(hs, lambda ms: len(ms) == 2)
        sock = trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM)
        with sock:
            rnd = random.Random(5)
            for size in (0, 1, 2, 50, 1400, 3000):
                await sock.sendto(rnd.randbytes(size), ("127.0.0.1", hs[0].port))
            await sock.sendto(b"\x01\x03\x92\x01", ("127.0.0.1", hs[0].port))
        # hostile TCP: a bad length, a non-map body, an unknown op, a bad state
        stream = await trio.open_tcp_stream("127.0.0.1", hs[0].port)
        async with stream:
            await stream.send_all(b"\xff\xff\xff\xff")
            assert await stream.receive_some(10) == b""  # closed on us
        bad = await query("127.0.0.1", hs[0].port, {"k": "swim", "op": "nope"})
        assert bad["ok"] is False
        bad = await query("127.0.0.1", hs[0].port, {"k": "swim", "op": "pushpull", "state": 3})
        assert bad["ok"] is False
        await wait_for_async(
            "member 0 to count the 5 bad inputs as dropped",
            lambda: sum(hs[0].statistics().dropped.values()),
            until=lambda n: n >= 5,
            timeout=10,
        )
        # still working: it answers and stays in the cluster
        stats = await query("127.0.0.1", hs[0].port, {"k": "stats"})
        assert stats["ok"] is True
        assert len(stats["members"]) == 2
        await wait_all(hs, lambda ms: all(m.state == "alive" for m in ms))


async def test_loss_and_delay_faults_are_survivable(tmp_path: Path) -> None:
    cfg = SwimConfig.lan(
        probe_interval=0.2, probe_timeout=0.15, gossip_interval=0.05, pushpull_interval=2.0
    )
    async with cluster(4, tmp_path, cfg) as hs:
        await wait_all(hs, lambda ms: len(ms) == 4 and all(m.state == "alive" for m in ms))
        hs[1].faults.set_loss(None, 15)
        hs[2].faults.set_delay(None, 20)
        await trio.sleep(3.0)  # a soak: the property is that nothing is declared dead
        for h in hs:
            assert all(m.state is not MemberState.DEAD for m in h.members())
        assert (
            hs[1].statistics().dropped.get("loss_out", 0)
            + hs[1].statistics().dropped.get("loss_in", 0)
            > 0
        )


@pytest.fixture
def virtual_clock() -> trio.testing.MockClock:
    """Virtual time that jumps to the next deadline once every task has waited 2 ms of real
    time. Loopback delivers a datagram within the ``sendto`` call, so nothing is in flight by
    then; a late packet would only be delayed in virtual time, which SWIM tolerates."""
    return trio.testing.MockClock(autojump_threshold=0.002)


def _log(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


async def test_mock_clock_drives_failure_detection(
    tmp_path: Path, virtual_clock: trio.testing.MockClock
) -> None:
    """Under a MockClock, a silenced member is suspected, then declared dead after the
    suspicion timeout in virtual seconds, in a fraction of that in wall time."""
    cfg = SwimConfig.lan(pushpull_interval=60.0, rejoin_interval=60.0)
    lo = cfg.suspicion_mult * cfg.probe_interval  # 4 s: Min for 3 members, with K = 0
    mono_offset = time.monotonic() - trio.current_time()
    async with cluster(3, tmp_path, cfg) as hs:
        await wait_all(hs, lambda ms: len(ms) == 3 and all(m.state == "alive" for m in ms))
        hs[2].faults.block([0, 1])
        for h in hs[:2]:
            h.faults.block([2])
        virtual0, wall0 = trio.current_time(), time.monotonic()
        await wait_all(hs[:1], lambda ms: ms[2].state is MemberState.DEAD, timeout=60)
        seen_dead = trio.current_time()
        await wait_all(hs[1:2], lambda ms: ms[2].state is MemberState.DEAD, timeout=60)
        virtual, wall = trio.current_time() - virtual0, time.monotonic() - wall0
        await wait_all(hs[:2], lambda ms: ms[0].state == ms[1].state == "alive", timeout=60)
    # Detection takes the suspicion timeout plus a few periods of virtual time, and less wall
    # time than the timeout itself, which no driver on the wall clock could do.
    assert lo <= virtual <= lo + 8 * cfg.probe_interval
    assert wall < lo
    # Some survivor declared member 2 dead on its own timer, exactly `lo` after suspecting it.
    for i in (0, 1):
        events = [e for e in _log(tmp_path / f"events-{i}.jsonl") if e["subject"] == 2]
        suspected = next(e for e in events if e["new"] == "suspected")
        dead = next(e for e in events if e["new"] == "dead")
        if dead["cause"] == "suspicion_timeout":
            assert dead["mono"] - suspected["mono"] == pytest.approx(lo, abs=1e-6)
            break
    else:
        pytest.fail("no survivor declared member 2 dead on its suspicion timeout")
    # ``mono`` is virtual time moved onto time.monotonic() by an offset measured at start.
    dead = next(e for e in _log(tmp_path / "events-0.jsonl") if e["new"] == "dead")
    assert dead["mono"] == pytest.approx(mono_offset + seen_dead, abs=0.5)


async def test_framing_round_trip_and_errors() -> None:
    a, b = trio.testing.memory_stream_pair()
    await send_frame(a, {"k": "swim", "x": [1, b"y"]})
    assert await recv_frame(b, 1000) == {"k": "swim", "x": [1, b"y"]}
    await a.send_all(b"\x00\x00\x00\x02\xc1\xc1")
    with pytest.raises(FrameError):
        await recv_frame(b, 1000)
    await a.send_all(b"\x00\x00\x00\x01\x01")
    with pytest.raises(FrameError, match="not a map"):
        await recv_frame(b, 1000)
    await a.send_all(b"\x00\x01\x00\x00")
    with pytest.raises(FrameError, match="outside"):
        await recv_frame(b, 1000)
    await a.send_all(b"\x00\x00\x00\x05ab")
    await a.aclose()
    with pytest.raises(FrameError, match="ended"):
        await recv_frame(b, 1000)


async def test_packets_go_out_at_once_or_through_the_queue_in_order() -> None:
    """sockets rule 3 (driver rule 9): to an address literal with nothing queued a packet is
    sent from the code that made it; to a host name it goes through the send queue (trio
    resolves it), and while anything is queued later packets queue behind it, so none
    overtakes another."""
    got: list[bytes] = []
    with trio.socket.socket(trio.socket.AF_INET, trio.socket.SOCK_DGRAM) as sink:
        await sink.bind(("127.0.0.1", 0))
        port = sink.getsockname()[1]
        async with open_swim(FAST, node_id=0, host="127.0.0.1", port=0) as h:
            h._sender.send_nowait(b"one", ("127.0.0.1", port))
            assert h._sender.queued == 0  # sent already
            data, _ = await sink.recvfrom(100)
            got.append(data)
            h._sender.send_nowait(b"two", ("localhost", port))  # a name: queued for the send task
            h._sender.send_nowait(b"three", ("127.0.0.1", port))  # behind it, not before
            assert h._sender.queued == 2
            with trio.fail_after(10):
                while len(got) < 3:
                    data, _ = await sink.recvfrom(100)
                    got.append(data)
            # the send task counts a packet out once its sendto returns
            await wait_for_async(
                "the queue to empty", lambda: h._sender.queued, until=lambda n: n == 0
            )
    assert got == [b"one", b"two", b"three"]
