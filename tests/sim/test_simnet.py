"""The whole-node simulator's network (cluster.sim.net): UDP and TCP between hosts, its faults,
in virtual time."""

from __future__ import annotations

import errno
import random
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio

from cluster.sim import SimNet, VirtualClock, on_host
from cluster.sim.simsocket import RTO_MAX_S, retransmission_at


def run(body: Callable[[SimNet], Awaitable[Any]]) -> Any:
    async def main() -> Any:
        net = SimNet(random.Random(1))
        with net.installed():
            return await body(net)

    return trio.run(main, clock=VirtualClock())


async def udp(host: int, port: int) -> trio.socket.SocketType:
    with on_host(host):
        sock = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    await sock.bind(("127.0.0.1", port))
    return sock


def test_a_datagram_arrives_after_the_links_latency_and_a_partition_or_a_cut_loses_it() -> None:
    async def body(net: SimNet) -> None:
        a, b = await udp(0, 7000), await udp(1, 7001)
        t0 = trio.current_time()
        await a.sendto(b"one", ("127.0.0.1", 7001))
        data, src = await b.recvfrom(100)
        assert (data, src) == (b"one", ("127.0.0.1", 7000))
        assert 0.0005 <= trio.current_time() - t0 <= 0.002  # the drawn latency, virtual

        net.cut(0, 1)  # one way: what 0 sends 1 is lost, what 1 sends 0 arrives
        await a.sendto(b"lost", ("127.0.0.1", 7001))
        await b.sendto(b"back", ("127.0.0.1", 7000))
        assert (await a.recvfrom(100))[0] == b"back"
        net.heal()
        net.partition([[0], [1]])
        await b.sendto(b"lost too", ("127.0.0.1", 7000))
        net.heal()
        await a.sendto(b"after", ("127.0.0.1", 7001))
        assert (await b.recvfrom(100))[0] == b"after"  # nothing lost was kept
        with trio.move_on_after(1):
            await a.recvfrom(100)
            raise AssertionError("a datagram lost in the partition arrived")
        assert net.lost == 2

    run(body)


def test_a_paused_host_reads_what_waited_once_thawed() -> None:
    async def body(net: SimNet) -> None:
        a, b = await udp(0, 7000), await udp(1, 7001)
        net.freeze(1)
        await a.sendto(b"held", ("127.0.0.1", 7001))
        with trio.move_on_after(3):
            await b.recvfrom(100)
            raise AssertionError("a paused host read")
        net.thaw(1)
        assert (await b.recvfrom(100))[0] == b"held"

    run(body)


async def echo_server(net: SimNet, host: int, port: int, nursery: trio.Nursery) -> trio.CancelScope:
    """An echo server of ``host``'s; cancel the scope it returns when the host is killed, as
    the simulator cancels a killed node's tasks."""

    async def echo(stream: trio.SocketStream) -> None:
        async for chunk in stream:
            await stream.send_all(chunk)

    async def serve(task_status: trio.TaskStatus[trio.CancelScope]) -> None:
        with trio.CancelScope() as scope, on_host(host):
            listeners = await trio.open_tcp_listeners(port, host="127.0.0.1")
            task_status.started(scope)
            await trio.serve_listeners(echo, listeners)

    scope: trio.CancelScope = await nursery.start(serve)
    return scope


def test_tcp_streams_carry_bytes_in_order_refuse_a_closed_port_and_end_with_a_killed_host() -> None:
    async def body(net: SimNet) -> None:
        async with trio.open_nursery() as nursery:
            server = await echo_server(net, 1, 9000, nursery)
            with on_host(0):
                stream = await trio.open_tcp_stream("127.0.0.1", 9000)
                with pytest.raises(OSError) as refused:
                    await trio.open_tcp_stream("127.0.0.1", 9999)
            assert refused.value.errno == errno.ECONNREFUSED or "9999" in str(refused.value)
            for word in (b"alpha", b"beta", b"gamma"):
                await stream.send_all(word)
            got = b""
            while len(got) < 14:
                got += await stream.receive_some(3)
            assert got == b"alphabetagamma"
            net.kill(1)
            server.cancel()
            assert await stream.receive_some(10) == b""  # the kernel's FIN of a killed process
            with on_host(0), pytest.raises(OSError):
                await trio.open_tcp_stream("127.0.0.1", 9000)  # nobody listens any more
            nursery.cancel_scope.cancel()

    run(body)


def test_a_connect_across_a_partition_waits_for_the_heal_and_a_paused_listener_for_its_thaw() -> (
    None
):
    async def body(net: SimNet) -> None:
        async with trio.open_nursery() as nursery:
            await echo_server(net, 1, 9000, nursery)
            net.partition([[0], [1]])
            with on_host(0), trio.move_on_after(5) as waited:
                await trio.open_tcp_stream("127.0.0.1", 9000)
            assert waited.cancelled_caught  # SYNs retried: silence, not a refusal
            nursery.start_soon(_heal_at, net, trio.current_time() + 2)
            t0 = trio.current_time()
            with on_host(0):
                stream = await trio.open_tcp_stream("127.0.0.1", 9000)
            assert trio.current_time() - t0 >= 2
            net.freeze(1)
            await stream.send_all(b"ping")
            with trio.move_on_after(4) as silent:
                await stream.receive_some(10)
            assert silent.cancelled_caught
            net.thaw(1)
            assert await stream.receive_some(10) == b"ping"
            nursery.cancel_scope.cancel()

    run(body)


async def _heal_at(net: SimNet, when: float) -> None:
    await trio.sleep_until(when)
    net.heal()


def test_bytes_a_cut_held_land_at_the_senders_next_retransmission_after_the_heal() -> None:
    """``simsocket`` rule 3: a kernel retransmits a held segment 0.2 s after it first went,
    then after 0.4 s, 0.8 s...: bytes held 10 s land at the retransmission 12.6 s after they
    were first sent, not at the heal. Bytes that landed before the cut are read through it."""
    assert retransmission_at(0.0, 10.0) == pytest.approx(12.6)
    assert retransmission_at(5.0, 5.0) == 5.0
    assert retransmission_at(0.0, 1e6) - retransmission_at(0.0, 1e6 - 1) <= RTO_MAX_S

    async def body(net: SimNet) -> None:
        async with trio.open_nursery() as nursery:
            listener = await echo_server(net, 1, 9000, nursery)
            with on_host(0):
                stream = await trio.open_tcp_stream("127.0.0.1", 9000)
            await stream.send_all(b"early")
            await trio.sleep(0.1)  # it went to the server and came back, unread
            net.cut(1, 0)
            assert await stream.receive_some(10) == b"early"  # it had landed: read through
            net.heal()
            net.cut(0, 1)
            sent = trio.current_time()
            await stream.send_all(b"late")
            nursery.start_soon(_heal_at, net, sent + 10)
            assert await stream.receive_some(10) == b"late"
            back = trio.current_time() - sent
            assert 12.6 <= back <= 12.7, back  # the retransmission after the heal, then the echo
            listener.cancel()
            nursery.cancel_scope.cancel()

    run(body)
