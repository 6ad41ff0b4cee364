"""The helpers that stand in for the world: a port held taken, the in-memory UDP network."""

from __future__ import annotations

import socket

import pytest
import trio

from cluster.local import check_port_free, free_port
from tests.support import HOST, hold_port
from tests.support.memudp import memory_udp


@pytest.mark.parametrize("udp", [False, True])
def test_a_held_port_is_taken_for_every_check(udp: bool) -> None:
    # A port free for both halves and below the ephemeral range, so no outgoing connection of
    # another test takes the TCP twin of the UDP port held here (the check tries TCP first).
    with hold_port(port=free_port(), udp=udp) as port:
        why = check_port_free(HOST, port, udp=True)  # binds with SO_REUSEADDR for TCP
        assert why == f"{'UDP' if udp else 'TCP'} port {port} on {HOST} is already in use"


def test_a_held_port_that_does_not_listen_refuses_connections() -> None:
    with hold_port(listen=False) as port, pytest.raises(ConnectionRefusedError):
        socket.create_connection((HOST, port), timeout=5)


async def test_the_memory_network_delivers_at_once_and_drops_to_nobody() -> None:
    with memory_udp() as net:
        with trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a:
            await a.bind((HOST, 0))
            b = trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            await b.bind((HOST, 0))
            await a.sendto(b"hello", b.getsockname())
            assert await b.recvfrom(3) == (b"hel", a.getsockname())  # no wait: it is there
            b.close()
            await a.sendto(b"gone", b.getsockname())
        assert (net.sent, net.undeliverable, net.bound) == (2, 1, {})
        with pytest.raises(OSError, match="not supported"):
            trio.socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    with trio.socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as real:  # the hook is gone
        assert real.fileno() >= 0
