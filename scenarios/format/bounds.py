"""Bounds derived from the protocol's own timing: what ``within: auto`` (or no ``within``) means.

Rules:
1. A bound is a sum of named terms, each the time one stage of the protocol takes, in seconds,
   at the stated confidence (default 99.9 %: the bound is meant to hold in 999 runs of 1,000).
   The error budget ``1 - confidence`` is split evenly between the random stages (the first
   probe of the failed member, the spread of the news), so their quantiles add up safely.
2. The stages (docs/membership.md, "How long things take", has the derivation):
   - *first probe*: the P = N - 1 - (members already down) survivors each walk a shuffled
     round-robin list of the N - 1 others, one probe per period T; the first of them to reach
     the failed member does so after D1 with P(D1 > r·T) = S(r / (N - 1))^P, where S is the
     chance one prober's next probe of it
     is more than that share of a pass away (``_residual``). That steady-state model
     underestimates the tail by up to 3x in the seconds after a cluster forms (measured over
     3,000 simulated kills: P(D1 > 4 T) was 0.0017 against 0.0008 at N = 5), so this term
     is taken at a tenth of its share of the error budget (``PROBE_MARGIN``).
   - *probe period*: the suspicion is raised at the end of the failed probe's period (T).
     Each member already down can cost a prober one point of local health (a helper that
     never nacks), stretching that period: (1 + down) · T, at most awareness_max · T.
   - *suspicion*: Lifeguard's Min = suspicion_mult · max(1, log10 N) · T, once the K
     confirmations arrive; each member that hears the suspicion confirms it with its own
     buddy pings within three periods, so only the part of 3T beyond Min adds (``confirm``).
   - *spread*: an epidemic with fanout F = gossip_nodes per gossip interval reaches all N
     members with probability 1 - e after log_{F+1} N + ln(N / e) / F rounds.
   - *loop lag* (real processes only): timers fire late and packets wait on a busy 2-core
     machine; ``LAG_REAL`` per timer stage and ``START_REAL`` for a process to start
     (interpreter, imports, bind, join): estimates, checked only by the real runs of
     ``bench.verdicts`` so far (docs/membership.md).
   - *after a resume, add or restart*: the node hears the verdict on it (or joins) within a
     period, then its alive spreads; *after the heal of loss or delay*: a probe stretched by
     Lifeguard's local health (up to awareness_max periods) may still be running, then a buddy
     ping clears each suspicion, then the refutations spread; *after the heal of a
     partition*: the members that hold a seed dead re-join it within ``rejoin_interval``
     (gossip to the dead has ended after ``gossip_to_the_dead_time``; a shorter split heals
     sooner), the merge's accusations reach the members they name, their refutations
     spread, and a member that missed one has it from the catch-up push/pull ``CATCH_UP``
     periods after the first member came back (``swim.resync`` rule 3).
3. Only the kinds whose timing the protocol fixes are derived: ``dead`` and ``leader_change``
   after kill, pause or stop; ``alive`` and ``converged`` after resume, restart, add, and
   heal (``after`` is then ``heal-loss`` or ``heal-partition``: what it healed). A
   partition's own verdicts (who sees whom dead, which depends on Lifeguard's local health on
   each side) need a ``within:`` in the file: ``BoundError`` says so.
4. Pure arithmetic on ``SwimConfig`` values: the same bound for the same settings and size.
"""

from __future__ import annotations

import math

from swim import SwimConfig
from swim.resync import CATCH_UP

from .records import Bound

__all__ = ["CONFIDENCE", "LAG_REAL", "START_REAL", "BoundError", "derive"]

CONFIDENCE = 0.999
PROBE_MARGIN = 10  # the first-probe quantile is taken at a tenth of its share (rule 2)
LAG_REAL = 0.5  # seconds a timer stage may run late on a loaded 2-core machine (an estimate)
START_REAL = 4.0  # seconds for a new node process to start, bind and join (an estimate)


class BoundError(ValueError):
    """No bound can be derived for this expectation: the file must give ``within``."""


def derive(
    kind: str,
    after: str,
    n: int,
    config: SwimConfig,
    *,
    real: bool,
    confidence: float = CONFIDENCE,
    down: int = 0,
) -> Bound:
    """The bound of an expectation ``kind`` after a step of kind ``after`` in an ``n``-node
    cluster (its size at that step) with ``config``, ``down`` of its other members already
    killed, stopped or paused (they probe nobody); ``real`` adds the loop-lag allowances."""
    eps = (1.0 - confidence) / 2.0
    t = config.probe_interval
    spread_term = ("spread", spread(n, config, eps))
    if kind in ("dead", "leader_change") and after in ("kill", "pause"):
        lo, _ = _suspicion(config, n)
        terms = [
            ("first probe", first_probe(n, t, eps / PROBE_MARGIN, probers=n - 1 - down)),
            ("probe period", min(1 + down, config.awareness_max) * t),
            ("suspicion (Min)", lo),
            ("confirm", max(0.0, 3 * t - lo)),
            spread_term,
        ]
        lag, formula = 3, "D1 + (1 + down) T + Min + max(0, 3T - Min) + spread"
    elif kind in ("dead", "leader_change") and after == "stop":
        terms, lag, formula = [spread_term], 1, "spread of the leave"
    elif kind in ("alive", "converged") and after in ("resume", "restart", "add"):
        first = "hear the verdict" if after == "resume" else "join"
        terms, lag, formula = [(first, t), spread_term], 2, "T + spread"
        if real and after != "resume":
            terms.append(("process start", START_REAL))
            formula += " + start"
    elif kind in ("alive", "converged") and after == "heal-loss":
        terms = [("probe in flight", config.awareness_max * t), ("buddy ping", t), spread_term]
        lag, formula = 2, "awareness_max x T + T + spread"
    elif kind in ("alive", "converged") and after == "heal-partition" and config.rejoin_interval:
        terms = [
            ("next re-join", config.rejoin_interval),
            ("accusations reach", spread(n, config, eps)),
            ("refutations", spread(n, config, eps)),
            ("catch-up push/pull", (CATCH_UP + 1) * t),
        ]
        lag, formula = 3, "rejoin_interval + 2 spread + (CATCH_UP + 1) T"
    else:
        step = after.split("-")[0]
        raise BoundError(
            f"no bound is derived for {kind} after a {step} step: "
            "give 'within:' (derived: dead/leader_change after kill, pause, stop; "
            "alive/converged after resume, restart, add, and heal, with re-join on for a "
            "partition)"
        )
    if real:
        terms.append(("loop lag", lag * LAG_REAL))
        formula += f" + {lag} x lag"
    seconds = round(sum(v for _, v in terms), 2)
    rounded = tuple((name, round(v, 3)) for name, v in terms)
    quantiles = f"spread at {1 - eps:.4%}"
    if any(name == "first probe" for name, _ in terms):
        quantiles = f"D1 at {1 - eps / PROBE_MARGIN:.5%}, " + quantiles
    return Bound(seconds, confidence, rounded, f"{formula}; {quantiles}")


def _suspicion(config: SwimConfig, n: int) -> tuple[float, float]:
    scale = max(1.0, math.log10(max(1, n)))
    lo = config.suspicion_mult * scale * config.probe_interval
    return lo, config.suspicion_max_timeout_mult * lo


def _residual(a: float) -> float:
    """P(a prober's next probe of a given member is more than ``a`` passes away), a >= 0.

    Each pass visits the N - 1 members in a fresh random order: at a random moment the
    prober is at a uniform point u of its pass and the member at a uniform place p of it (and
    p' of the next pass); the wait is p - u if p > u, else (1 - u) + p'.
    """
    if a <= 0:
        return 1.0
    if a >= 2:
        return 0.0
    if a >= 1:
        return (2 - a) ** 3 / 6
    b = 1 - a
    later_this_pass = b * b / 2
    next_pass = b * b / 2 + (2 - a) * (1 - b * b) / 2 - (1 - b**3) / 3
    return later_this_pass + next_pass


def first_probe(n: int, period: float, eps: float, probers: int | None = None) -> float:
    """Seconds until one of the ``probers`` survivors (default n - 1), each walking a list of
    the n - 1 others, probes the failed member, at 1 - ``eps``."""
    m = max(1, n - 1)
    k = max(1, m if probers is None else probers)
    lo, hi = 0.0, 2.0  # in passes of m periods
    for _ in range(60):  # bisection: P(D1 > a·m·T) = S(a)^k decreases in a
        mid = (lo + hi) / 2
        if _residual(mid) ** k > eps:
            lo = mid
        else:
            hi = mid
    return hi * m * period


def spread(n: int, config: SwimConfig, eps: float) -> float:
    """Seconds for a rumour to reach all ``n`` members at 1 - ``eps`` (infection-style)."""
    fanout = max(1, config.gossip_nodes)
    rounds = math.log(max(2, n), fanout + 1) + math.log(max(2, n) / eps) / fanout
    return math.ceil(rounds) * config.gossip_interval
