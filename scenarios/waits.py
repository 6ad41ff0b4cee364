"""What a chaos test waits for: conditions over the cluster's views, and the records of waits.

Rules:
1. A condition is judged on one look at the views (``{observer: {subject: state}}``, None
   for an observer that did not answer); ``Condition.seen`` words that look for the timeout
   message: who sees what, only where it differs from what was awaited.
2. The observers of a condition are asked again at every look (``observers``): by default
   the nodes running at that moment, so a node paused or killed meanwhile is not waited on.
3. ``Wait`` is a wait as a scenario expectation (``replay`` writes it into a file): its bound
   is counted from the action it followed, in seconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = ["POLL", "Condition", "Views", "Wait", "WaitTimeout", "converged", "seen_as"]

POLL = {"sim": 0.05, "real": 0.1, "netns": 0.1}  # seconds between looks at the views while waiting
Views = dict[int, dict[int, str] | None]


class WaitTimeout(AssertionError):
    """A wait ran out of time; the message says what was awaited and who sees what."""


@dataclass(frozen=True, slots=True)
class Wait:
    """One wait of a test, as a scenario expectation: ``kind`` (dead, alive, converged) of
    ``node`` seen by ``by`` (None: every node up), ``within`` seconds after the action
    ``after`` (or the start); ``ok`` False when it timed out."""

    kind: str
    node: int | None
    by: tuple[int, ...] | None
    after: str
    within: float
    ok: bool = True


@dataclass(frozen=True, slots=True)
class Condition:
    """What a wait awaits (``what``), whether one look shows it (``done``), who saw what
    (``seen``) and whom to ask (``observers``)."""

    what: str
    done: Callable[[Views], bool]
    seen: Callable[[Views], str]
    observers: Callable[[], list[int]]


def seen_as(
    i: int, states: tuple[str, ...], word: str, observers: Callable[[], list[int]]
) -> Condition:
    """Every observer holds node ``i`` in one of ``states`` (``word`` names them)."""

    def done(v: Views) -> bool:
        return all(_holds(v, o, i, states) for o in observers())

    def seen(v: Views) -> str:
        return "; ".join(f"node {o} sees {i} {_of(v, o, i)}" for o in observers())

    return Condition(f"node {i} seen {word} by {ids(observers())}", done, seen, observers)


def converged(running: Callable[[], list[int]]) -> Condition:
    """Every running node holds every running node alive."""

    def done(v: Views) -> bool:
        ups = running()
        return all(_holds(v, o, s, ("alive",)) for o in ups for s in ups)

    def seen(v: Views) -> str:
        rows = []
        for o in running():
            row = v.get(o)
            if row is None:
                rows.append(f"node {o} did not answer")
                continue
            off = [f"{s} {row.get(s, 'unknown')}" for s in running() if row.get(s) != "alive"]
            if off:
                rows.append(f"node {o} sees " + ", ".join(off))
        return "; ".join(rows)

    return Condition("converged", done, seen, running)


def _holds(v: Views, o: int, s: int, states: tuple[str, ...]) -> bool:
    row = v.get(o)
    return row is not None and row.get(s) in states


def _of(v: Views, o: int, s: int) -> str:
    row = v.get(o)
    return "(no answer)" if row is None else row.get(s, "unknown")


def ids(nodes: Iterable[int]) -> str:
    """``0, 1, 2``; ``nobody`` for none."""
    return ", ".join(map(str, nodes)) or "nobody"
