"""Planted protocol bugs for ``bench.explore``: each a real defect of a different kind, put into
the machine (``swim.membership``, ``swim.lifeguard``) for the ``with`` block (forked search
workers inherit it).

- ``no_expiry``: a suspicion's deadline is never reached, so no one is ever declared dead
  (liveness of failure detection: ``completeness``).
- ``busy_expiry``: expiry declares no one, while the timer still asks for it now: the machine
  re-arms it for the same instant forever (a livelock: ``no_exception``, the simulator's stall
  guard).
- ``stale_refute``: a refutation re-uses the accuser's incarnation instead of outbidding it,
  so it loses to the suspicion it answers (accuracy: a live node declared dead).
- ``lower_alive``: an alive message of a lower incarnation overwrites the table's
  (``incarnation`` goes down at the observer).
- ``crash_on_confirm``: a machine raises when a second accuser confirms a suspicion it holds
  (``no_exception``).
- ``sticky_dead``: a member held dead ignores every alive of the same boot (no re-join after a
  false death or a heal: ``convergence``).
- ``direct_answer``: a helper asked for an indirect probe has the target answer the original
  prober directly (the helper's ping names the prober as its sender, under the prober's
  sequence number) instead of through the helper. Invisible without faults and under
  symmetric partitions (the ack takes a route that works whenever the helper's would); when
  the target cannot send to the prober (a one-way cut), every indirect probe fails too and
  the prober suspects a member that every other route reaches (``cut_accuracy``).
- ``older_boot_ignored``: an alive of an older boot than the one held is ignored, even at a
  newer incarnation (a restart is recognised only by a later boot). Harmless while boots only
  grow; a node restarted after its clock jumped back boots "earlier" than its predecessor, and
  once the others held that predecessor dead it is never taken back (``convergence``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import swim
from swim import membership as mem
from swim.lifeguard import Suspicion
from swim.membership import Membership
from swim.messages import Ping
from swim.relays import Relays

__all__ = ["PLANTS", "planted"]


def _no_expiry(original: Callable[..., Any]) -> Callable[..., Any]:
    def deadline(self: Suspicion) -> float:
        return float("inf")

    return deadline


def _busy_expiry(original: Callable[..., Any]) -> Callable[..., Any]:
    def expire(self: Membership, now: float) -> None:
        return None

    return expire


def _stale_refute(original: Callable[..., Any]) -> Callable[..., Any]:
    def refute(self: Membership, m: Any, now: float, *, epoch: bool) -> None:
        me = self.me
        me.incarnation = m.incarnation  # the defect: not m.incarnation + 1
        alive = mem.Alive(me.incarnation, me.node_id, me.host, me.port, me.boot)
        self.out.broadcast(me.node_id, alive)

    return refute


def _lower_alive(original: Callable[..., Any]) -> Callable[..., Any]:
    def alive(self: Membership, m: Any, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is not None and m.boot == e.boot and m.incarnation < e.incarnation:
            e.incarnation = m.incarnation  # the defect: an older claim taken as news
            self.out.event(now, e, e.state, "gossip")
            return
        original(self, m, cause, now)

    return alive


def _crash_on_confirm(original: Callable[..., Any]) -> Callable[..., Any]:
    def suspect(self: Membership, m: Any, cause: str, now: float, via: int | None = None) -> None:
        e = self.table.get(m.node)
        if e is not None and e.suspicion is not None and m.src != e.suspicion.accuser:
            raise KeyError(f"confirmer {m.src}")  # the defect: a lookup that assumed one accuser
        original(self, m, cause, now, via)

    return suspect


def _sticky_dead(original: Callable[..., Any]) -> Callable[..., Any]:
    def alive(self: Membership, m: Any, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is not None and e.state.is_down and m.boot == e.boot:
            return  # the defect: a member held down stays down until it restarts
        original(self, m, cause, now)

    return alive


def _direct_answer(original: Callable[..., Any]) -> Callable[..., Any]:
    def relay(self: Relays, m: Any, now: float) -> None:
        # The defect: the target is pinged as if by the asker, so its ack skips the helper.
        parts: list[Any] = [Ping(m.seq, m.target, m.src, m.src_host, m.src_port)]
        parts += self._membership.accusation_of(m.target)
        self._outbox.send_parts((m.target_host, m.target_port), m.target, "relay_ping", parts)

    return relay


def _older_boot_ignored(original: Callable[..., Any]) -> Callable[..., Any]:
    def alive(self: Membership, m: Any, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is not None and m.boot < e.boot:
            return  # the defect: only a later boot is news, whatever its incarnation
        original(self, m, cause, now)

    return alive


Maker = Callable[[Callable[..., Any]], Callable[..., Any]]
PLANTS: dict[str, tuple[type, str, Maker]] = {
    "no_expiry": (Suspicion, "deadline", _no_expiry),
    "busy_expiry": (Membership, "expire", _busy_expiry),
    "stale_refute": (Membership, "_refute", _stale_refute),
    "lower_alive": (Membership, "_alive", _lower_alive),
    "crash_on_confirm": (Membership, "_suspect", _crash_on_confirm),
    "sticky_dead": (Membership, "_alive", _sticky_dead),
    "direct_answer": (Relays, "relay", _direct_answer),
    "older_boot_ignored": (Membership, "_alive", _older_boot_ignored),
}


@contextmanager
def planted(name: str) -> Iterator[None]:
    """The machine with the bug ``name`` for the block, the original put back after. Needs
    swim as Python: a compiled class cannot be patched (``swim.native`` rule 1)."""
    if swim.native.IN_USE:
        raise RuntimeError("planted bugs patch swim's Python classes: run with RTSIM_PURE=1")
    owner, method, make = PLANTS[name]
    original = getattr(owner, method)
    setattr(owner, method, make(original))
    try:
        yield
    finally:
        setattr(owner, method, original)
