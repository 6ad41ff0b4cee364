"""The simulated network's CPU model: a node that works through its packets one at a time.

With ``SimNetwork(cpu=(decoded, shed))`` a packet costs its node ``decoded`` seconds of work
once decoded and ``shed`` when refused before decoding; packets wait their turn in a socket
buffer. Timers still fire on time, as trio interleaves its tasks. This is how a flood starves
a member of time in virtual time.

Rules:
1. One packet at a time per node, oldest first: the next one starts when the last one's cost
   is paid (``busy_until``), never earlier than it arrived.
2. A socket buffer holds ``QUEUE_CAP`` packets; the rest are lost and counted per node in
   ``overflow``, as a kernel drops datagrams on a full receive buffer.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .messages import Message

__all__ = ["QUEUE_CAP", "CpuModel", "Packet", "Unsealed", "Worker"]

QUEUE_CAP = 4096  # packets a socket buffer holds (rule 2)


@dataclass(frozen=True, slots=True, init=False)
class Unsealed:
    """A packet as its records, with its weight on the wire in bytes (``simnodes`` rule 5)."""

    messages: tuple[Message, ...]
    size: int

    def __init__(self, messages: tuple[Message, ...], size: int) -> None:  # native rule 4
        object.__setattr__(self, "messages", messages)
        object.__setattr__(self, "size", size)


Packet = tuple[bytes | Unsealed, tuple[str, int]]  # bytes, or records (simnodes rule 5)


@dataclass(slots=True)
class Worker:
    """One node's socket buffer and the packet it is working on."""

    inbox: deque[Packet] = field(default_factory=deque)
    working: bool = False  # a work event is scheduled
    busy_until: float = 0.0  # when the packet being handled is done


class CpuModel:
    """What each packet costs, and each node's buffer (see the module docstring)."""

    def __init__(self, decoded: float, shed: float) -> None:
        self.decoded = decoded
        self.shed = shed
        self.overflow: dict[int, int] = {}  # packets lost to a full socket buffer, per node

    def arrive(self, node_id: int, w: Worker, packet: Packet, when: float) -> float | None:
        """``packet`` reaches the node's buffer; returns when to start work if none is
        scheduled (rule 1), else None."""
        if len(w.inbox) >= QUEUE_CAP:
            self.overflow[node_id] = self.overflow.get(node_id, 0) + 1
            return None
        w.inbox.append(packet)
        if w.working:
            return None
        w.working = True
        return max(when, w.busy_until)

    def done(self, w: Worker, when: float, dropped: bool) -> float | None:
        """The packet taken at ``when`` is handled (``dropped``: refused before decoding);
        returns when the next one starts, or None when the buffer is empty."""
        w.busy_until = when + (self.shed if dropped else self.decoded)
        if w.inbox:
            return w.busy_until
        w.working = False
        return None
