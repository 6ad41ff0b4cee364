"""Ports held busy on purpose: a test that needs "this port is taken" binds it here.

Rules:
1. The holder is a plain socket of this process, without ``SO_REUSEADDR``: every other bind of
   the port (also one with ``SO_REUSEADDR``, as ``cluster.local.check_port_free`` makes) fails
   while the block runs, and a port check names this process as the holder.
2. TCP by default, listening (a connection is queued, never accepted); ``listen=False`` leaves
   it bound only, so a connection to it is refused at once, and no other process can take the
   port meanwhile (unlike a port found free and closed again). ``udp=True`` holds the UDP half.
"""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from .harness import HOST

__all__ = ["held_socket", "hold_port"]


@contextlib.contextmanager
def held_socket(
    host: str = HOST, port: int = 0, *, udp: bool = False, listen: bool = True, backlog: int = 8
) -> Iterator[socket.socket]:
    """A socket bound to ``host:port`` (0: a free port), listening with ``backlog`` if TCP and
    ``listen``; closed when the block ends."""
    kind = socket.SOCK_DGRAM if udp else socket.SOCK_STREAM
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind((host, port))
        if listen and not udp:
            sock.listen(backlog)
        yield sock


@contextlib.contextmanager
def hold_port(
    host: str = HOST, port: int = 0, *, udp: bool = False, listen: bool = True
) -> Iterator[int]:
    """Hold ``host:port`` taken (0: a free port) while the block runs; yields the port."""
    with held_socket(host, port, udp=udp, listen=listen) as sock:
        yield int(sock.getsockname()[1])
