"""Free ports on this host: checked for TCP (and UDP, which a runtime port also carries)."""

from __future__ import annotations

import errno
import socket
from collections.abc import Iterable

from .record import ClusterError

__all__ = ["check_port_free", "free_port", "pick_free_ports"]


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


def pick_free_ports(host: str, count: int, *, udp: bool, avoid: Iterable[int] = ()) -> list[int]:
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
