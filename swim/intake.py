"""Intake: what an untrusted UDP packet must pass before anything decodes it.

A flood (tens of thousands of pings or ping-reqs a second) must cost a member little, and
must not crowd out the acks and gossip of its peers, or they would start to suspect one
another. So every packet meets, cheapest first:

1. a size check (``oversize``);
2. a rate check on its source address, one dict lookup: the address of a known member has a
   token bucket sized for many times a member's normal traffic (``rate_member``); any other
   address ("a stranger": a joining member, or an attacker) may send a few packets per
   protocol period (``rate_source``), and all strangers together share a small budget per
   period (``rate_strangers``). Members never draw on the strangers' budget, so a flood from
   strangers cannot starve them: members' packets come first by construction;
3. with a keyring, authentication (``auth``): for a stranger after the rate checks, so a
   forged flood costs at most its budget in AES-GCM work; for a member's address *before* its
   bucket, so packets forged in a member's name cannot use up that member's share.

Rules:
1. Sans-IO: ``now`` (seconds) is passed in; the only state is counts and buckets.
2. Memory is bounded: one bucket per member address (the table bounds it: buckets of
   addresses no member holds any more are pruned when they outnumber the table); strangers
   are counted per period, at most ``MAX_STRANGERS`` of them, then the rest are refused.
3. Every refusal is counted by reason in ``Counters.dropped``; every packet in ``arrived``.
"""

from __future__ import annotations

from .config import SwimConfig
from .keyring import UDP, Keyring
from .messages import BadMessage
from .outputs import Counters
from .table import MemberTable

__all__ = ["MAX_STRANGERS", "Intake"]

MEMBER_HEADROOM = 8.0  # a member's bucket: this many times its normal packet rate to us...
MEMBER_BURST_S = 2.0  # ...and this many seconds of it at once
STRANGER_PER_PERIOD = 8  # packets one stranger may send per protocol period
STRANGERS_PER_PERIOD = 100  # packets all strangers together may send per protocol period
MAX_STRANGERS = 1024  # distinct strangers counted per period (the dict's bound)


class Intake:
    """The admission of one machine's incoming packets (see the module docstring)."""

    def __init__(
        self,
        config: SwimConfig,
        table: MemberTable,
        counters: Counters,
        keyring: Keyring | None,
        max_bytes: int,
    ) -> None:
        c = config
        self.max_bytes = max_bytes  # the member's wire format's read limit (``wireformat`` rule 3)
        self._table = table
        self._counters = counters
        self._keyring = keyring
        # A member sends us at most a gossip packet per gossip tick plus, per period, a probe,
        # a buddy probe, acks of our probes and relays: about 1/gossip + 5/period a second.
        self._member_rate = MEMBER_HEADROOM * (1.0 / c.gossip_interval + 5.0 / c.probe_interval)
        self._member_burst = self._member_rate * MEMBER_BURST_S
        self._buckets: dict[tuple[str, int], list[float]] = {}  # addr -> [tokens, stamp]
        self._period = c.probe_interval
        self._window_end = float("-inf")
        self._strangers: dict[tuple[str, int], int] = {}
        self._strangers_left = STRANGERS_PER_PERIOD

    def admit(self, data: bytes, addr: tuple[str, int], now: float) -> bytes | None:
        """The packet's plaintext if it may be decoded, else None (the drop is counted)."""
        counters = self._counters
        counters.arrived += 1
        if len(data) > self.max_bytes:
            counters.drop("oversize")
            return None
        if self._keyring is None:
            return data if self._rate_ok(addr, now) else None
        if self._table.id_at(addr[0], addr[1]) is not None:
            plain = self._open(data)
            return plain if plain is not None and self._member_ok(addr, now) else None
        if not self._stranger_ok(addr, now):
            return None
        return self._open(data)

    def admit_plain(self, size: int, addr: tuple[str, int], now: float) -> bool:
        """``admit`` for a packet of ``size`` bytes that needs no opening (no keyring): its
        size and its source's rate."""
        assert self._keyring is None
        self._counters.arrived += 1
        if size > self.max_bytes:
            self._counters.drop("oversize")
            return False
        return self._rate_ok(addr, now)

    def _rate_ok(self, addr: tuple[str, int], now: float) -> bool:
        if self._table.id_at(addr[0], addr[1]) is not None:
            return self._member_ok(addr, now)
        return self._stranger_ok(addr, now)

    def _member_ok(self, addr: tuple[str, int], now: float) -> bool:
        b = self._buckets.get(addr)
        if b is None:
            if len(self._buckets) >= 2 * len(self._table) + 64:
                self._prune()
            b = self._buckets[addr] = [self._member_burst, now]
        else:
            b[0] = min(self._member_burst, b[0] + (now - b[1]) * self._member_rate)
            b[1] = now
        if b[0] < 1.0:
            self._counters.drop("rate_member")
            return False
        b[0] -= 1.0
        return True

    def _prune(self) -> None:
        """Forget the buckets of addresses no member holds (moved, or removed: rule 2)."""
        held = self._table.id_at
        self._buckets = {a: b for a, b in self._buckets.items() if held(a[0], a[1]) is not None}

    def _stranger_ok(self, addr: tuple[str, int], now: float) -> bool:
        if now >= self._window_end:
            self._window_end = now + self._period
            self._strangers.clear()
            self._strangers_left = STRANGERS_PER_PERIOD
        seen = self._strangers.get(addr, 0)
        if seen >= STRANGER_PER_PERIOD or (not seen and len(self._strangers) >= MAX_STRANGERS):
            self._counters.drop("rate_source")
            return False
        if self._strangers_left <= 0:
            self._counters.drop("rate_strangers")
            return False
        self._strangers[addr] = seen + 1
        self._strangers_left -= 1
        return True

    def _open(self, data: bytes) -> bytes | None:
        assert self._keyring is not None
        try:
            return self._keyring.open_untrusted(data, UDP)
        except BadMessage as exc:
            self._counters.drop(exc.reason)
            return None
