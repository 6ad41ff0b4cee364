"""Membership: updates applied to the table under SWIM's precedence rules.

``alive``, ``suspect`` and ``dead`` updates (from gossip, push/pull or our own probes) are
applied here; this is where suspicions start, get confirmed and expire, and where a member
refutes what is said about itself. Who may enter the table at all: ``newcomers``.

Rules:
1. Validate, then mutate: ``members.overrides`` decides, and a rejected update leaves the
   table untouched.
2. Every accepted update is queued for gossip again, and every change of a member's state or
   incarnation yields exactly one event.
3. Only a member raises its own incarnation (a refutation), and only when it hears a current
   accusation or a conflicting alive from another boot of itself. A correction goes straight
   to the member that needs it, never waiting for gossip: the author of a stale accusation
   gets our newer ``alive``, and so does the accuser we refute; a member that passes on a
   stale suspicion or death of a third member (one we hold alive at a newer incarnation)
   gets that newer ``alive`` back; the author of a suspicion of a member we hold dead at that
   incarnation gets our own suspicion, the confirmation a lone accuser lacks (``machine``
   rule 6), at most once a protocol period per author and subject. How each correction is
   sent: ``corrections``.

No single message can make a live member unrefutable. Incarnations live in
0..``MAX_INCARNATION`` (the codec's range), and:

4. Bounded jumps. An update about a known member other than us whose incarnation is more than
   ``MAX_JUMP`` above the one we hold is refused and counted (``refused_incarnation``): one
   message moves what we believe by at most ``MAX_JUMP``, never to the top of the range. The
   one exception is a restart: an ``alive`` with a *later* boot than the one we hold, for a
   member we hold suspected, dead or left, is a new instance of it and comes back at whatever
   incarnation it carries (it knows nothing of its predecessor's). Boots are ordered: the
   wall clock's milliseconds when taken, then random bits (``ordered_boot``), so the
   ghost of an earlier instance, gossiped by a member that slept through the restart, never
   passes for a restart, whoever hears it. A boot more than ``BOOT_AHEAD_S`` ahead of our
   clock is refused and counted (``refused_incarnation``), and one we held and replaced is
   retired (never a restart again). An older boot still counts by plain precedence (a newer
   incarnation), so a member whose boot a forged alive replaced is never shut out, nor is one
   whose own boot was refused as too far ahead once its clock is corrected (rule 5).
5. Refutation is always possible. Accused at incarnation ``i`` at or above ours, we refute at
   ``i + 1`` when that is within ``MAX_JUMP`` of ours (so every member that held our last
   incarnation accepts it under rule 4) and within the range. Otherwise, and when a stale
   accusation comes from more than ``MAX_JUMP`` below (its author could not accept our
   alive), we start a new boot epoch: a fresh boot nonce at our incarnation + 1 (0 from the
   top of the range), later than ours and than any boot claimed for us. Members that believed
   the accusation hold us suspected or dead, so they take the new boot as a restart (rule 4);
   the others take our incarnation + 1 by plain precedence. Copies of the claim a new boot
   answered get that boot, not another one. A boot of ours more than ``BOOT_AHEAD_S`` ahead
   of our own clock (taken while that clock was far ahead, since corrected) was refused by
   every member whose clock is true: then every accusation, stale or not, gets a new epoch,
   its boot from our clock, past only the boots not that far ahead of it (ours and claimed),
   at ``i + 1`` when that is in reach (else as above): members holding an earlier boot of us
   down take it as a restart, the rest (even those whose clock took the far boot) by plain
   precedence.
6. Like a suspicion (``machine`` rule 6), a packet to a member we hold dead or left carries
   that verdict, so a live member we wrongly hold down hears it the first time it talks to us.
7. A member we do not know enters the table only through ``newcomers``: within a budget a
   period, below ``max_members``, and never at the address of another member we hold up.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable

from .config import SwimConfig
from .corrections import Corrections
from .lifeguard import Awareness, Suspicion, suspicion_bounds
from .members import MemberState, overrides
from .messages import Alive, Dead, StateEntry, Suspect
from .newcomers import Newcomers
from .outbox import Outbox
from .outputs import Counters
from .table import Entry, MemberTable

__all__ = ["BOOT_RANDOM_BITS", "MAX_INCARNATION", "MAX_JUMP", "Membership", "ordered_boot"]

MAX_INCARNATION = (1 << 63) - 1  # the codec's range (wire: u63)
MAX_JUMP = 1 << 20  # a million refutations between two views: never by honest gossip
RETIRED_MAX = 4  # rule 4: retired boots remembered per member
BOOT_AHEAD_S = 86_400.0  # rule 4: how far ahead of our clock a boot may be (clock skew)
BOOT_RANDOM_BITS = 20  # below the milliseconds: two boots in one millisecond differ


def ordered_boot(wall_s: float, rng: random.Random) -> int:
    """A boot nonce that orders boots by when they were taken: the wall clock's milliseconds,
    then ``BOOT_RANDOM_BITS`` random bits (rule 4). A simulation's wall clock
    is its virtual time."""
    ms = min(max(0, int(wall_s * 1000)), (1 << (62 - BOOT_RANDOM_BITS)) - 1)
    return ms << BOOT_RANDOM_BITS | rng.getrandbits(BOOT_RANDOM_BITS)


_ALIVE, _SUSPECTED, _DEAD, _LEFT = (
    MemberState.ALIVE,
    MemberState.SUSPECTED,
    MemberState.DEAD,
    MemberState.LEFT,
)


class Membership:
    """The rules that change a member table."""

    def __init__(
        self,
        config: SwimConfig,
        table: MemberTable,
        outbox: Outbox,
        awareness: Awareness,
        counters: Counters,
        new_boot: Callable[[int], int],
        wall_offset: float = 0.0,
    ) -> None:
        self.config = config
        self.table = table
        self.me = table.me
        self.out = outbox
        self.awareness = awareness
        self.counters = counters
        self._new_boot = new_boot  # a boot from our clock, at least the floor given (rule 5)
        self._wall_offset = wall_offset  # seconds from ``now`` to the wall clock (rule 4)
        self.claimed = 0  # the latest boot another instance of us was said to have (rule 5)
        self._epoch_for = -1  # the incarnation of the claim our last new boot answered
        self.newcomers = Newcomers(config, table, counters)  # rule 7
        self.rejoined = False  # a member held dead came back (``resync`` rule 3)
        self.left = False
        self.suspects: set[int] = set()  # ids with a running suspicion
        self.corrections = Corrections(table, outbox, config.probe_interval)  # rule 3

    def set_wall_offset(self, seconds: float) -> None:
        """Rule 4: our wall clock reads ``now + seconds`` from here on."""
        self._wall_offset = float(seconds)

    def apply(
        self, m: Alive | Suspect | Dead, cause: str, now: float, via: int | None = None
    ) -> None:
        """Apply one update (``cause`` labels the event: gossip, pushpull, ...); ``via`` is
        the member whose packet carried it, if known (rule 3's corrections go there)."""
        if m.node == self.me.node_id:
            self._about_me(m, now)
        elif isinstance(m, Alive):
            self._alive(m, cause, now)
        elif isinstance(m, Suspect):
            self._suspect(m, cause, now, via)
        else:
            self._dead(m, cause, now, via)

    def merge(self, entries: Iterable[StateEntry], now: float, accuser: int) -> None:
        """Merge a push/pull state; remote suspect/dead count as suspicions by ``accuser``."""
        me, table = self.me.node_id, self.table
        for s in entries:
            if s.state is _ALIVE:
                # Most rows repeat what we hold: an alive of the boot we hold at no newer
                # incarnation changes nothing (``_alive``, ``_about_me``), so skip it here.
                e = table.peek(s.node)
                if e is None or e.boot != s.boot or e.incarnation < s.incarnation:
                    alive = Alive(s.incarnation, s.node, s.host, s.port, s.boot)
                    self.apply(alive, "pushpull", now)
                continue
            known = s.node == me or s.node in table
            alive = Alive(s.incarnation, s.node, s.host, s.port, s.boot)
            if not known and s.state.is_down:
                # Listed for display only; a live one refutes when it hears of it.
                if self.newcomers.admit(s.node, s.host, s.port, now, None):
                    e = Entry(s.node, s.host, s.port, s.incarnation, s.state, s.boot, now)
                    self.table.add(e)
                    self.out.event(now, e, None, "pushpull")
            elif s.state is _LEFT:
                self.apply(Dead(s.incarnation, s.node, s.node), "pushpull", now)
            else:
                if not known:  # learn it first, so the suspicion has something to apply to
                    self.apply(alive, "pushpull", now)
                self.apply(Suspect(s.incarnation, s.node, accuser), "pushpull", now)

    def leave(self, now: float) -> None:
        self.left = True
        self.set_state(self.me, _LEFT, "leave", now)
        self.out.broadcast(
            self.me.node_id, Dead(self.me.incarnation, self.me.node_id, self.me.node_id)
        )

    def expire(self, now: float) -> None:
        """Declare dead every member whose suspicion timed out."""
        for i in list(self.suspects):
            e = self.table.get(i)
            if e is None or e.suspicion is None:
                self.suspects.discard(i)
            elif now >= e.suspicion.deadline():
                self._dead(Dead(e.incarnation, i, self.me.node_id), "suspicion_timeout", now)

    def next_expiry(self) -> float:
        t = float("inf")
        for i in self.suspects:
            e = self.table.get(i)
            if e is not None and e.suspicion is not None:
                t = min(t, e.suspicion.deadline())
        return t

    def accusation_of(self, node_id: int) -> list[Suspect | Dead]:
        """What we hold against ``node_id`` (suspected, dead, left), to hand to it.

        Empty if we hold it up and unsuspected. Rule 6 and ``machine`` rule 6.
        """
        e = self.table.get(node_id)
        if e is None or e is self.me:
            return []
        if e.state is _SUSPECTED:
            m: Suspect | Dead = Suspect(e.incarnation, node_id, self.me.node_id)
        elif e.state is _DEAD:
            m = Dead(e.incarnation, node_id, self.me.node_id)
        elif e.state is _LEFT:
            m = Dead(e.incarnation, node_id, node_id)
        else:
            return []
        return [m]

    def longest_suspected(self, exclude: int) -> Entry | None:
        best: tuple[float, int] | None = None
        for i in self.suspects:
            e = self.table.get(i)
            if e is not None and e.suspicion is not None and i != exclude:
                key = (e.suspicion.start, i)
                best = key if best is None or key < best else best
        return None if best is None else self.table.get(best[1])

    def answered(self, e: Entry, now: float) -> None:
        """An answered probe makes a probe_failed or suspected member alive again."""
        if e.state in (MemberState.PROBE_FAILED, _SUSPECTED):
            self._clear_suspicion(e)
            self.set_state(e, _ALIVE, "ack", now)

    def set_state(
        self, e: Entry, new: MemberState, cause: str, now: float, *, force_event: bool = False
    ) -> None:
        old = e.state
        if old is new and not force_event:
            return
        if old is not new:
            e.state = new
            e.changed = now
            self.table.note_transition(e, old)
        self.out.event(now, e, old, cause)

    # ---- the three updates ----------------------------------------------------------------

    def _about_me(self, m: Alive | Suspect | Dead, now: float) -> None:
        if self.left:
            return
        me, inc = self.me, self.me.incarnation
        if isinstance(m, Alive):
            if self._too_far_ahead(m.boot, now):
                return
            if m.boot != me.boot:
                self.claimed = max(self.claimed, m.boot)  # our next epoch's boot goes beyond
            # A claim from another boot of us (a predecessor's ghost) at our incarnation or
            # beyond must be outbid; our own alive coming back is not news.
            if m.incarnation < inc or (m.boot == me.boot and m.incarnation <= inc):
                return
        elif m.incarnation < inc:
            if inc - m.incarnation <= MAX_JUMP and not self._stranded(now):
                self.corrections.answer(m.src, Alive(inc, me.node_id, me.host, me.port, me.boot))
            else:  # rule 5: its author could not accept our alive; a new boot it can
                self._refute(m, now, epoch=True)
            return
        target = m.incarnation + 1
        far = target - inc > MAX_JUMP or target > MAX_INCARNATION
        self._refute(m, now, epoch=far or self._stranded(now))

    def _refute(self, m: Alive | Suspect | Dead, now: float, *, epoch: bool) -> None:
        """Rule 5: outbid ``m`` at its incarnation + 1, or start a new boot epoch."""
        me = self.me
        stranded = self._stranded(now)  # rule 5: a boot taken from a clock far ahead
        if epoch and m.incarnation == self._epoch_for and not stranded:
            # A copy of the claim our last new boot answered: its holders take that boot as
            # a restart already, so answer the accuser; a new boot per copy would only churn.
            if not isinstance(m, Alive):
                self.corrections.answer(
                    m.src, Alive(me.incarnation, me.node_id, me.host, me.port, me.boot)
                )
            return
        if epoch:
            self._epoch_for = m.incarnation
            held = [b for b in (me.boot, self.claimed) if not self._ahead(b, now)]
            me.boot = self._new_boot(max(held, default=0) + 1)
            bid = m.incarnation + 1  # a stranded boot's epoch outbids a claim in reach too
            if me.incarnation < bid <= min(me.incarnation + MAX_JUMP, MAX_INCARNATION):
                me.incarnation = bid
            else:
                me.incarnation = me.incarnation + 1 if me.incarnation < MAX_INCARNATION else 0
            self.counters.epochs += 1
        else:
            me.incarnation = m.incarnation + 1
        self.awareness.apply(1)
        self.counters.refutations += 1
        self.out.event(now, me, _ALIVE, "refute")
        alive = Alive(me.incarnation, me.node_id, me.host, me.port, me.boot)
        self.out.broadcast(me.node_id, alive)
        if isinstance(m, Suspect | Dead):
            self.corrections.answer(m.src, alive)

    def admit_waiting(self, now: float) -> None:
        """``newcomers`` rule 1: let in the newcomers that waited for this period's budget."""
        for m, cause in self.newcomers.due(now):
            self._alive(m, cause, now)

    def _ahead(self, boot: int, now: float) -> bool:
        """Rule 4: is ``boot`` more than ``BOOT_AHEAD_S`` ahead of our clock?"""
        return boot >> BOOT_RANDOM_BITS > int((now + self._wall_offset + BOOT_AHEAD_S) * 1000)

    def _stranded(self, now: float) -> bool:
        """Rule 5: is our boot ``_ahead`` of our clock, when one taken now would not be (a
        clock read before 1970 takes boots at 0 ms, ``ordered_boot``: all of them ahead)?"""
        return self._ahead(self.me.boot, now) and not self._ahead(0, now)

    def _too_far_ahead(self, boot: int, now: float) -> bool:
        """Rule 4: ``_ahead``, counted (``refused_incarnation``) if so."""
        if self._ahead(boot, now):
            self.counters.drop("refused_incarnation")
            return True
        return False

    def _within_reach(self, e: Entry, incarnation: int) -> bool:
        """Rule 4: is ``incarnation`` at most ``MAX_JUMP`` above what we hold? Counted if not."""
        if incarnation - e.incarnation > MAX_JUMP:
            self.counters.drop("refused_incarnation")
            return False
        return True

    def _alive(self, m: Alive, cause: str, now: float) -> None:
        e = self.table.get(m.node)
        if e is None:
            if not self.newcomers.admit(m.node, m.host, m.port, now, (m, cause)):
                return
            e = Entry(m.node, m.host, m.port, m.incarnation, _ALIVE, m.boot, now)
            self.table.add(e)
            self.out.event(now, e, None, "join" if cause == "gossip" else cause)
            self.out.broadcast(m.node, m)
            return
        # Rule 4: a later boot for a member held suspected or down is a new instance of it
        # (a restart): it comes back at whatever incarnation it starts with.
        if self._too_far_ahead(m.boot, now):
            return
        restarted = (
            m.boot > e.boot
            and (e.state is _SUSPECTED or e.state.is_down)
            and m.boot not in e.retired
        )
        if not restarted and not overrides(_ALIVE, m.incarnation, e.state, e.incarnation):
            return
        if not restarted and not self._within_reach(e, m.incarnation):
            return
        moved = self.table.id_at(m.host, m.port) != e.node_id
        if moved and not self.newcomers.address_free(e.node_id, m.host, m.port):
            return
        old = e.state
        if restarted:
            cause = "restart"
        elif old.is_down:
            cause = "rejoin"
            self.rejoined = True
        elif old is not _ALIVE or cause == "gossip":
            cause = "refute"
        if moved:  # a new address, or ours again after a holder we hold down took it
            self.table.set_addr(e, m.host, m.port)
        if m.boot != e.boot:
            e.retired = (*e.retired[1 - RETIRED_MAX :], e.boot)
        e.boot = m.boot
        e.incarnation = m.incarnation
        self._clear_suspicion(e)
        self.set_state(e, _ALIVE, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _suspect(self, m: Suspect, cause: str, now: float, via: int | None = None) -> None:
        e = self.table.get(m.node)
        if e is None:
            return
        if e.state is _SUSPECTED and e.suspicion is not None and m.incarnation == e.incarnation:
            if e.suspicion.confirm(m.src):
                self.out.broadcast(m.node, m)  # pass the confirmation on
            return
        if not overrides(_SUSPECTED, m.incarnation, e.state, e.incarnation):
            if e.state is _DEAD and m.incarnation == e.incarnation and m.src != self.me.node_id:
                self.corrections.confirm_to(m.src, e, now)  # rule 3: a lone accuser asked around
            self.corrections.correct(via, m, e)
            return
        if not self._within_reach(e, m.incarnation):
            return
        c = self.config
        n = self.table.up_count
        lo, hi = suspicion_bounds(
            c.suspicion_mult, c.suspicion_max_timeout_mult, n, c.probe_interval
        )
        k = c.suspicion_mult - 2
        if n - 2 < k:  # too few members to ever confirm: go straight to Min
            k = 0
        e.incarnation = m.incarnation
        e.suspicion = Suspicion(m.incarnation, now, lo, hi, k, m.src)
        self.suspects.add(e.node_id)
        self.counters.suspicions += 1
        self.set_state(e, _SUSPECTED, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _dead(self, m: Dead, cause: str, now: float, via: int | None = None) -> None:
        e = self.table.get(m.node)
        if e is None:
            return
        if not overrides(_DEAD, m.incarnation, e.state, e.incarnation):
            self.corrections.correct(via, m, e)
            return
        if not self._within_reach(e, m.incarnation):
            return
        new = _LEFT if m.src == m.node else _DEAD
        if new is _LEFT and cause == "gossip":
            cause = "leave"
        e.incarnation = m.incarnation
        self._clear_suspicion(e)
        self.set_state(e, new, cause, now, force_event=True)
        self.out.broadcast(m.node, m)

    def _clear_suspicion(self, e: Entry) -> None:
        e.suspicion = None
        self.suspects.discard(e.node_id)
