"""This machine as a node's placement and the launcher see it: its names, the addresses of its
interfaces, and a resolver.

Rules:
1. ``Machine.here()`` asks the system once (host names, ``psutil.net_if_addrs``, DNS); the
   decisions that use a ``Machine`` take it as a value, so tests pass their own.
2. An address is compared without its IPv6 zone; a loopback address is this machine's.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass

import psutil

__all__ = ["Machine", "interface_addresses"]


@dataclass(frozen=True, slots=True)
class Machine:
    """This machine as placement sees it: its names (lower case), its interface addresses and
    a resolver (a host -> its addresses, () when it does not resolve)."""

    names: frozenset[str]
    addresses: frozenset[str]
    resolve: Callable[[str], tuple[str, ...]]

    @classmethod
    def here(cls) -> Machine:
        """This machine, asked of the system (names, ``psutil.net_if_addrs``, DNS)."""
        names = {n.lower().rstrip(".") for n in (socket.gethostname(), socket.getfqdn()) if n}
        return cls(frozenset(names), interface_addresses(), _resolve)

    def has_address(self, host: str) -> bool:
        """Whether ``host`` resolves to an address of this machine (loopback included)."""
        return any(a in self.addresses or _is_loopback(a) for a in self.resolve(host))

    def is_named(self, host: str) -> bool:
        return host.lower().rstrip(".") in self.names

    def describe(self) -> str:
        shown_addresses = sorted(a for a in self.addresses if not _is_loopback(a))
        name = min(self.names, key=len) if self.names else "this host"
        return f"{name}, addresses {', '.join(shown_addresses) or 'loopback only'}"


def interface_addresses() -> frozenset[str]:
    """The IPv4 and IPv6 addresses of this machine's interfaces (``psutil.net_if_addrs``, an
    IPv6 zone cut off)."""
    return frozenset(
        a.address.partition("%")[0]
        for addrs in psutil.net_if_addrs().values()
        for a in addrs
        if a.family in (socket.AF_INET, socket.AF_INET6)
    )


def _resolve(host: str) -> tuple[str, ...]:
    try:
        infos = socket.getaddrinfo(host.strip("[]"), None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):  # a label over 63 characters fails in the idna codec
        return ()
    return tuple(str(info[4][0]).partition("%")[0] for info in infos)


def _is_loopback(address: str) -> bool:
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False
