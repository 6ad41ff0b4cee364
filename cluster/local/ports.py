"""Free ports on this host: checked for TCP (and UDP, which a runtime port also carries),
picked below the kernel's ephemeral range so outgoing connections cannot take them."""

from __future__ import annotations

import errno
import random
import socket
from collections.abc import Iterable
from pathlib import Path

from .record import ClusterError

__all__ = [
    "check_port_free",
    "ephemeral_range",
    "free_port",
    "next_free_port",
    "pick_free_ports",
]

EPHEMERAL_RANGE = "/proc/sys/net/ipv4/ip_local_port_range"
QUIET_LOW = 10000  # the lowest port picked when any free one will do


def check_port_free(host: str, port: int, *, udp: bool) -> str | None:
    """None if ``port`` can be bound on ``host`` (TCP, and UDP too if asked), else why not."""
    kinds = [socket.SOCK_STREAM] + ([socket.SOCK_DGRAM] if udp else [])
    for kind in kinds:
        with socket.socket(socket.AF_INET, kind) as s:
            if kind == socket.SOCK_STREAM:
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind((host, port))
            except OSError as exc:
                proto = "TCP" if kind == socket.SOCK_STREAM else "UDP"
                if exc.errno == errno.EADDRINUSE:
                    return f"{proto} port {port} on {host} is already in use"
                hint = " (ports below 1024 need privileges)" if exc.errno == errno.EACCES else ""
                return f"{proto} port {port} on {host} cannot be bound ({exc.strerror}){hint}"
    return None


def free_port(host: str = "127.0.0.1", *, udp: bool = True) -> int:
    """One port free now for TCP (and UDP, the default: a runtime port carries both)."""
    return pick_free_ports(host, 1, udp=udp)[0]


def next_free_port(host: str, used: set[int], *, udp: bool) -> int:
    """The port after the highest used one when it is free, else any free port."""
    port = max(used, default=0) + 1
    if 1024 < port < 65536 and check_port_free(host, port, udp=udp) is None:
        return port
    return pick_free_ports(host, 1, udp=udp, avoid=used)[0]


def ephemeral_range() -> tuple[int, int]:
    """The kernel's range of ports for outgoing connections (and binds to port 0)."""
    try:
        low, high = (int(x) for x in Path(EPHEMERAL_RANGE).read_text().split())
    except (OSError, ValueError):
        return 32768, 60999  # Linux's default
    return low, high


def pick_free_ports(host: str, count: int, *, udp: bool, avoid: Iterable[int] = ()) -> list[int]:
    """``count`` distinct ports free now (TCP, and UDP if asked), below the kernel's range of
    ephemeral ports where there are enough: there no outgoing connection of this host (a
    node's push/pull, the launcher's questions) can take one before its node binds it, as
    happens at a few hundred nodes. The scan starts at a random port, so launches at the same
    time rarely pick the same ones. Else ports the kernel hands out."""
    taken = set(avoid)
    low, _ = ephemeral_range()
    quiet = list(range(QUIET_LOW, low))
    if len(quiet) >= 4 * count:
        start = random.randrange(len(quiet))
        ports: list[int] = []
        for port in quiet[start:] + quiet[:start]:
            if port not in taken and check_port_free(host, port, udp=udp) is None:
                taken.add(port)
                ports.append(port)
                if len(ports) == count:
                    return ports
    return _kernel_ports(host, count, udp=udp, avoid=taken)


def _kernel_ports(host: str, count: int, *, udp: bool, avoid: set[int]) -> list[int]:
    """``count`` distinct ports the kernel hands out as free now (TCP, and UDP if asked)."""
    taken = set(avoid)
    ports: list[int] = []
    for _ in range(count * 50):
        if len(ports) == count:
            break
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((host, 0))
            except OSError as exc:
                raise ClusterError(f"cannot bind any port on {host}: {exc.strerror}") from None
            port = int(s.getsockname()[1])
        if port in taken or check_port_free(host, port, udp=udp) is not None:
            continue
        taken.add(port)
        ports.append(port)
    if len(ports) < count:
        raise ClusterError(f"could not find {count} free ports on {host}")
    return ports
