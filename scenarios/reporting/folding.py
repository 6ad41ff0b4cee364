"""Folding the timeline's rows: every observer's view of the window, grouped so a cluster of
any size fits on a page. ``timeline`` draws what this returns.

Rules:
1. A view is an observer's rows: a row per subject whose state changed in its view, over the
   window; the subjects it always held alive are only counted, and its own down spans kept.
2. Observers whose rows are identical as drawn (to the pixel), or who saw nothing change, share
   one band; in a band, subjects with identical rows share one row. When that still leaves more
   than ``ROW_BUDGET`` rows (large clusters), rows fold by the order of states instead
   ("similar view": same subjects, same sequence of states, each begun in the same quarter of
   the window, times differ), drawn stacked: the row's height split by how many of its views
   held each state. When even that is taller than ``HEIGHT_BUDGET``, one band holds a stacked
   row per subject (how many observers held it in each state).
3. Folds are measured in the drawing's pixels, so the geometry they depend on (``WIDTH``,
   ``LEFT``, ``PLOT_W``, ``ROW``, ``BAND_HEAD``, ``BAND_GAP``) and the ``Scale`` live here.
4. The window starts up to two seconds before the start (from the launch) and ends with the
   trace.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ..judge.trace import INF, Trace, Views

__all__ = [
    "BAND_GAP",
    "BAND_HEAD",
    "LEFT",
    "PLOT_W",
    "ROW",
    "WIDTH",
    "Band",
    "Row",
    "Scale",
    "Seg",
    "exact_key",
    "fold_bands",
    "scale_of",
]

ROW_BUDGET = 60  # rows drawn before rows fold by their order of states
SHAPE_SLOTS = 4  # a "similar" row's states began in the same quarters of the window
HEIGHT_BUDGET = 1400  # pixels of bands before they fold into one band of a row per subject
WIDTH = 1000
LEFT = 120  # the label column, pixels
PLOT_W = WIDTH - LEFT - 24  # the plot area right of the labels, pixels
ROW = 8  # height of one subject row, pixels
BAND_HEAD, BAND_GAP = 13, 5  # a band's label line and the space after it

Seg = tuple[float, float, str | None]
_Key = Callable[[Sequence[tuple[Any, ...]]], Hashable]
_BandKey = tuple[tuple[tuple[Hashable, tuple[int, ...]], ...], Hashable]  # rows, down spans


@dataclass(frozen=True, slots=True)
class Scale:
    """The time window shown (trace clock, seconds) and its mapping to x pixels."""

    t_start: float
    t_end: float
    t0: float  # the start of the scenario: axis labels count from here

    def x(self, t: float) -> float:
        span = self.t_end - self.t_start
        return LEFT + PLOT_W * (min(max(t, self.t_start), self.t_end) - self.t_start) / span

    def shows(self, a: float, b: float) -> bool:
        """Whether the interval ``a..b`` overlaps the window."""
        return b > self.t_start and a < self.t_end


@dataclass(frozen=True, slots=True)
class _View:
    """One observer's rows before folding: every subject whose state changed, and when."""

    observer: int
    rows: tuple[tuple[int, tuple[Seg, ...]], ...]  # (subject, segments over the window)
    quiet: int  # subjects it always held alive
    down: tuple[tuple[float, float], ...]  # when its own process was not running


@dataclass(frozen=True, slots=True)
class Row:
    subjects: tuple[int, ...]
    views: tuple[tuple[Seg, ...], ...]  # the segments of each (observer, subject) folded here
    owners: tuple[int, ...]  # the observer of each view


@dataclass(frozen=True, slots=True)
class Band:
    observers: tuple[int, ...]
    rows: tuple[Row, ...]
    quiet: tuple[int, int]  # fewest and most always-alive subjects among its observers
    down: tuple[tuple[float, float], ...]  # down spans of all its observers
    fold: str  # "same" (identical as drawn), "similar" (same order of states), "share"

    @property
    def height(self) -> int:
        return BAND_HEAD + ROW * max(1, len(self.rows)) + BAND_GAP


# ---- the views, before folding ------------------------------------------------------------------


def scale_of(trace: Trace) -> Scale:
    """The window of ``trace``: from up to two seconds before the start to its end."""
    t_start = (
        trace.t0 - min(2.0, max(0.0, trace.t0 - trace.launched)) if trace.launched else trace.t0
    )
    return Scale(t_start, max(trace.end, t_start + 0.1), trace.t0)


def _views(trace: Trace, views: Views, scale: Scale) -> list[_View]:
    out = []
    for o in trace.all_nodes():
        known = views.subjects_of.get(o, set()) - {o}
        changed = sorted(
            s
            for s in known
            if any(st != "alive" and t >= scale.t_start for t, st in views.transitions(o, s))
        )
        rows = tuple(
            (s, tuple(_segments(views, o, s, scale.t_start, scale.t_end))) for s in changed
        )
        down = tuple((a, b) for a, b in _down_spans(trace, o) if scale.shows(a, b))
        out.append(_View(o, rows, len(known) - len(changed), down))
    return out


def _segments(
    views: Views, o: int, s: int, a: float, b: float
) -> list[tuple[float, float, str | None]]:
    trans = [(t, st) for t, st in views.transitions(o, s) if a < t < b]
    points = [(a, views.state(o, s, a)), *trans]
    out = []
    for k, (t, st) in enumerate(points):
        nxt = points[k + 1][0] if k + 1 < len(points) else b
        if nxt > t:
            out.append((t, nxt, st))
    return out


def _down_spans(trace: Trace, node: int) -> list[tuple[float, float]]:
    ivs = sorted(trace.up_intervals().get(node, []))
    out, t = [], -INF
    for a, b in ivs:
        if a > t:
            out.append((max(t, trace.launched or trace.t0), a))
        t = b
    if t < INF:
        out.append((t, trace.end))
    return [(a, b) for a, b in out if b > a]


# ---- folding ---------------------------------------------------------------------------------


def exact_key(scale: Scale) -> _Key:
    """Spans (segments or down spans) as drawn: their ends rounded to the pixel."""
    return lambda spans: tuple((round(scale.x(s[0])), round(scale.x(s[1])), *s[2:]) for s in spans)


def _shape_key(scale: Scale) -> _Key:
    """The order of states a row went through, each with the part of the window it began in
    (so a death at the fault and a blip at the heal stay apart); probe_failed, private to the
    prober, counts as alive."""
    span = (scale.t_end - scale.t_start) / SHAPE_SLOTS

    def key(segs: Sequence[Seg]) -> Hashable:
        out: list[tuple[str | None, int]] = []
        for a, _, st in segs:
            st = "alive" if st == "probe_failed" else st
            if not out or out[-1][0] != st:
                out.append((st, int((a - scale.t_start) / span)))
        return tuple(out)

    return key


def _fold(views: list[_View], row_key: _Key, down_key: _Key, fold: str) -> list[Band]:
    """Subjects with equal row keys share a row; observers with equal bands share a band."""
    groups: dict[_BandKey, list[tuple[_View, list[list[tuple[Seg, ...]]]]]] = {}
    for v in views:
        rows: dict[Hashable, tuple[list[int], list[tuple[Seg, ...]]]] = {}
        for s, segs in v.rows:
            subjects, segments = rows.setdefault(row_key(segs), ([], []))
            subjects.append(s)
            segments.append(segs)
        key: _BandKey = (tuple((k, tuple(r[0])) for k, r in rows.items()), down_key(v.down))
        groups.setdefault(key, []).append((v, [r[1] for r in rows.values()]))
    bands = []
    for (row_keys, _), members in groups.items():
        rows_out = tuple(
            Row(
                subjects,
                tuple(segs for _, m in members for segs in m[k]),
                tuple(v.observer for v, m in members for _ in m[k]),
            )
            for k, (_, subjects) in enumerate(row_keys)
        )
        quiet = [v.quiet for v, _ in members]
        down = tuple(span for v, _ in members for span in v.down)
        observers = tuple(v.observer for v, _ in members)
        bands.append(Band(observers, rows_out, (min(quiet), max(quiet)), down, fold))
    return bands


def fold_bands(trace: Trace, views: Views, scale: Scale) -> list[Band]:
    """Folded bands: identical rows first; by order of states when that is still too tall."""
    per_observer = _views(trace, views, scale)
    exact = exact_key(scale)
    bands = _fold(per_observer, exact, exact, "same")
    if sum(max(1, len(b.rows)) for b in bands) > ROW_BUDGET:
        bands = _fold(per_observer, _shape_key(scale), len, "similar")
        if sum(b.height for b in bands) > HEIGHT_BUDGET:
            bands = [_by_subject(per_observer, scale)]
    return bands


def _by_subject(per_observer: list[_View], scale: Scale) -> Band:
    """One band for all observers, a row per subject: how many observers held each state."""
    always = ((scale.t_start, scale.t_end, "alive"),)
    changed: dict[int, dict[int, tuple[Seg, ...]]] = {}
    for v in per_observer:
        for s, segs in v.rows:
            changed.setdefault(s, {})[v.observer] = segs
    rows = tuple(
        Row(
            (s,),
            tuple(by_o.get(v.observer, always) for v in per_observer if v.observer != s),
            tuple(v.observer for v in per_observer if v.observer != s),
        )
        for s, by_o in sorted(changed.items())
    )
    quiet = len(per_observer) - len(changed)
    down = tuple(span for v in per_observer for span in v.down)
    observers = tuple(v.observer for v in per_observer)
    return Band(observers, rows, (quiet, quiet), down, "share")
