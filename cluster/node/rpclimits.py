"""The limits and counters of the node RPC server (``cluster.node.rpc``, its rule 2): what
each door allows (``RpcLimits``), what was refused (``RpcServerStats``), and the byte budget
all frames in flight share (``Budget``).

Rules:
1. Sizes are bytes, times seconds. Every refusal is a ``Closed`` naming the counter it goes
   to; ``RpcServerStats.count`` counts it and warns once per reason.
2. ``Budget`` is sync: nothing can run between its check and its charge.
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass, field

from cluster.rpc.frames import MAX_FRAME, MAX_VALUES

from . import fds

__all__ = ["Budget", "Closed", "RpcLimits", "RpcServerStats"]

log = logging.getLogger("cluster.node.rpc")


@dataclass(frozen=True, slots=True)
class RpcLimits:
    """The limits of one RPC server: sizes in bytes, times in seconds."""

    max_connections: int = fds.MAX_RPC_CONNECTIONS  # open at once; ``for_this_process`` fits it
    budget: int = 32 * 1024 * 1024  # what the frames being read and answered cost together
    small_reserve: int = 8 * 1024 * 1024  # of ``budget``, kept for frames of the small kinds
    max_frame: int = MAX_FRAME  # any frame; each kind has its own smaller ``MAX_BYTES``
    max_values: int = MAX_VALUES  # msgpack values in one frame
    frame_timeout: float = 5.0  # from a frame's first byte to its last
    idle_timeout: float = 30.0  # before a connection's first frame and between frames
    send_timeout: float = 5.0  # to write one reply

    def __post_init__(self) -> None:
        if not 0 <= self.small_reserve < self.budget or self.max_frame > self.budget:
            raise ValueError("an RPC budget holds its largest frame and its small reserve")

    @classmethod
    def for_this_process(cls) -> RpcLimits:
        """The defaults, with a connection cap under this process's open-file limit."""
        return cls(max_connections=fds.connection_cap())


@dataclass(slots=True)
class RpcServerStats:
    """Counters of one RPC server (``active`` and ``held_bytes`` are levels, not counts)."""

    connections: int = 0  # accepted and served
    active: int = 0  # open now
    requests: int = 0  # answered (an error reply included)
    failed: int = 0  # 500 replies: a handler's unexpected error, a reply that cannot be encoded
    malformed: int = 0  # closed: not a frame, not msgpack, not a request
    oversized: int = 0  # closed: a frame larger than its kind allows
    refused: int = 0  # accepted and closed at once: ``max_connections`` were open, none idle
    evicted: int = 0  # closed while idle, to make room for a new connection at the cap
    over_budget: int = 0  # closed: the frame would have passed the budget
    timed_out: int = 0  # closed: a frame not whole in time, or a reply not taken in time
    idle_closed: int = 0  # closed: no frame within the idle limit
    held_bytes: int = 0  # what the frames being read and answered cost now
    max_connections: int = 0  # the cap in force
    warned: set[str] = field(default_factory=set, repr=False)

    def as_dict(self) -> dict[str, int]:
        """The counters as a plain map (what ``control identity`` shows)."""
        out = asdict(self)
        del out["warned"]
        return out

    def count(self, reason: str, detail: object) -> None:
        """Count a closed connection under ``reason`` (a counter's name); warn the first time."""
        setattr(self, reason, getattr(self, reason) + 1)
        if reason not in self.warned:
            self.warned.add(reason)
            log.warning(
                "RPC: closed a connection (%s: %s); further ones are counted", reason, detail
            )
        else:
            log.debug("RPC: closed a connection (%s: %s)", reason, detail)


class Closed(Exception):
    """Ends one connection; ``reason`` is the ``RpcServerStats`` counter it goes to."""

    def __init__(self, reason: str, detail: object = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


class Budget:
    """The bytes the frames in flight cost, across all connections (sync: no checkpoint between
    the check and the charge)."""

    def __init__(self, limits: RpcLimits, stats: RpcServerStats) -> None:
        self.limits, self.stats = limits, stats

    def take(self, n: int, *, small: bool) -> None:
        """Charge ``n`` bytes; ``Closed("over_budget")`` if they do not fit. Frames of the
        small kinds may use the whole budget, others all but the small reserve."""
        room = self.limits.budget - (0 if small else self.limits.small_reserve)
        if self.stats.held_bytes + n > room:
            raise Closed("over_budget", f"{n} bytes with {self.stats.held_bytes} held")
        self.stats.held_bytes += n

    def give(self, n: int) -> None:
        self.stats.held_bytes -= n
