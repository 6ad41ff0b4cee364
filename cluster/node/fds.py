"""File-descriptor headroom of a node process: the open-file limit raised as far as the system
lets it, and how many RPC connections that leaves room for.

    raise_nofile_limit()     the soft RLIMIT_NOFILE raised to the hard limit; the soft limit now
    connection_cap(soft)     the RPC connections a node accepts at once under that limit

Rules:
1. ``raise_nofile_limit`` is called once when a node opens its RPC listeners, before any
   connection is accepted. It never raises: a system that refuses leaves the limit as it was
   (logged), and the connection cap follows whatever limit is in force.
2. The cap leaves ``RESERVED_FDS`` descriptors for everything else a node opens (its log, data
   files, the SWIM socket, psutil's reads of /proc, outgoing RPC calls) and half of the rest for
   the dashboard's connections, so the RPC port refuses new connections long before the process
   would reach EMFILE. It never exceeds ``MAX_RPC_CONNECTIONS``: the peers of a simulated
   cluster need a few connections each, not thousands.
"""

from __future__ import annotations

import logging
import resource

__all__ = [
    "MAX_RPC_CONNECTIONS",
    "MIN_RPC_CONNECTIONS",
    "RESERVED_FDS",
    "connection_cap",
    "nofile_limit",
    "raise_nofile_limit",
]

log = logging.getLogger(__name__)

RESERVED_FDS = 256  # descriptors kept for files, the SWIM socket, psutil and outgoing calls
MAX_RPC_CONNECTIONS = 512  # connections the RPC port holds at once, at most
MIN_RPC_CONNECTIONS = 8  # ... and at least, however low the limit (a node must stay reachable)
_UNLIMITED_TARGET = 65_536  # the soft limit asked for when the hard limit is "unlimited"
_PLENTY = 1 << 20  # what an unlimited soft limit counts as


def nofile_limit() -> int:
    """The soft limit on open files of this process (descriptors)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return _PLENTY if soft == resource.RLIM_INFINITY else int(soft)


def raise_nofile_limit() -> int:
    """Raise the soft RLIMIT_NOFILE to the hard limit (or to 65,536 when the hard limit is
    unlimited); the soft limit in force afterwards. Never raises."""
    try:
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError) as exc:  # pragma: no cover - every POSIX system answers
        log.warning("cannot read the open-file limit: %s", exc)
        return MIN_RPC_CONNECTIONS + RESERVED_FDS
    target = _UNLIMITED_TARGET if hard == resource.RLIM_INFINITY else hard
    if soft != resource.RLIM_INFINITY and soft < target:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (OSError, ValueError) as exc:
            log.warning(
                "open-file limit stays at %d (raising it to %d failed: %s)", soft, target, exc
            )
    return nofile_limit()


def connection_cap(soft: int | None = None) -> int:
    """How many RPC connections a node holds at once under the soft limit ``soft``
    (descriptors; None: this process's limit now)."""
    limit = nofile_limit() if soft is None else soft
    room = (limit - RESERVED_FDS) // 2
    return max(MIN_RPC_CONNECTIONS, min(MAX_RPC_CONNECTIONS, room))
