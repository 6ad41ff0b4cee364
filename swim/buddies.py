"""BuddyPings: the pings a member sends to the members it suspects, and what their silence means.

Rules:
1. One buddy ping per (unscaled) period, to the member suspected the longest; the machine
   sends it and says so here (``sent``); its ack clears the count of misses (``answered``).
2. A period ending with the ping unanswered is a miss. ``BUDDY_MISSES`` misses in a row are the
   member's own failed probe of that suspect, which confirms the suspicion as memberlist counts
   a member's own failed probe. A single miss never does: under loss it is too weak a sign.
3. Misses are forgotten for members no longer suspected. Pure bookkeeping: no clock, no I/O.
"""

from __future__ import annotations

from collections.abc import Container

__all__ = ["BUDDY_MISSES", "BuddyPings"]

BUDDY_MISSES = 2  # unanswered buddy pings in a row that confirm a suspicion (rule 2)


class BuddyPings:
    """Buddy pings in flight (seq -> suspect) and each suspect's misses in a row."""

    __slots__ = ("_misses", "_sent")

    def __init__(self) -> None:
        self._sent: dict[int, int] = {}
        self._misses: dict[int, int] = {}

    def __contains__(self, seq: int) -> bool:
        return seq in self._sent

    def sent(self, seq: int, node_id: int) -> None:
        self._sent[seq] = node_id

    def answered(self, seq: int) -> int:
        """The suspect that acked ping ``seq``; its misses start over."""
        node_id = self._sent.pop(seq)
        self._misses.pop(node_id, None)
        return node_id

    def period_over(self, suspects: Container[int]) -> list[int]:
        """End the period: the suspects whose silence now confirms the suspicion (rule 2)."""
        out = []
        for node_id in self._sent.values():
            missed = self._misses.get(node_id, 0) + 1
            self._misses[node_id] = missed
            if missed >= BUDDY_MISSES:
                out.append(node_id)
        self._sent.clear()
        self._misses = {i: n for i, n in self._misses.items() if i in suspects}
        return out
