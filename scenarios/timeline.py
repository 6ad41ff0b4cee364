"""The timeline of the report: an inline SVG of every observer's view of the members.

Rules:
1. A band per observer, in it a row per subject whose state changed in that view (the others
   are counted in the band's label), coloured by state. Fault intervals are shaded over every
   band and labelled at the bottom, on as many lines as the labels need; a row's first
   ``dead`` is marked with a tick.
2. Fold before drawing. Observers whose rows are identical as drawn (to the pixel), or who saw
   nothing change, share one band; in a band, subjects with identical rows share one row. When
   that still leaves more than ``ROW_BUDGET`` rows (large clusters), rows fold by the order of
   states instead ("similar view": same subjects, same sequence of states, each begun in the
   same quarter of the window, times differ) and
   are drawn stacked: the row's height split by how many of its views held each state. When
   even that is taller than ``HEIGHT_BUDGET``, one band holds a stacked row per subject (how
   many observers held it in each state).
3. The window starts up to two seconds before the start (from the launch) and ends with the
   trace; the axis is whole seconds after the start, at a step whose labels cannot overlap.
   Text is escaped.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from .charts import (
    CHAR_PX,
    DASH,
    action_label,
    id_ranges,
    lanes,
    stacked_steps,
    tick_label,
    tick_step,
    ticks,
)
from .trace import INF, Trace, Views

__all__ = ["legend", "timeline"]

COLORS = {
    "alive": "#4caf50",
    "probe_failed": "#ffc107",
    "suspected": "#ff9800",
    "dead": "#e53935",
    "left": "#8d6e63",
    None: "#e0e0e0",
}
STACK = ("dead", "left", "suspected", "probe_failed", "alive", None)  # top to bottom
FAULT_COLORS = {
    "kill": "#000000",
    "stop": "#5d4037",
    "pause": "#7b1fa2",
    "partition": "#1565c0",
    "loss": "#00838f",
    "delay": "#00838f",
}
MAX_BANDS = 64
ROW_BUDGET = 60  # rows drawn before rows fold by their order of states
SHAPE_SLOTS = 4  # a "similar" row's states began in the same quarters of the window
HEIGHT_BUDGET = 1400  # pixels of bands before they fold into one band of a row per subject
WIDTH = 1000
LEFT = 120  # the label column, pixels
PLOT_W = WIDTH - LEFT - 24  # the plot area right of the labels, pixels
ROW = 8  # height of one subject row, pixels
TOP = 24  # the axis labels above the first band
BAND_HEAD, BAND_GAP = 13, 5  # a band's label line and the space after it
LANE = 13  # one line of fault labels
SMALL_PX = 4.8  # estimated width of a character of 8 px text

Seg = tuple[float, float, str | None]
_Key = Callable[[Sequence[tuple[Any, ...]]], Hashable]
_BandKey = tuple[tuple[tuple[Hashable, tuple[int, ...]], ...], Hashable]  # rows, down spans


def legend() -> str:
    """The colour key of the timeline: member states, shaded faults, the death tick."""
    items = "".join(
        f"<span><i class='sw' style='background:{c}'></i>{escape(s or 'unknown')}</span>"
        for s, c in COLORS.items()
    )
    faults = "".join(
        f"<span><i class='sw' style='background:{c};opacity:.25'></i>{escape(k)}</span>"
        for k, c in FAULT_COLORS.items()
        if k != "delay"
    )
    return f"<div class='legend'>{items} · shaded: {faults} · <span>▼ first dead</span></div>"


@dataclass(frozen=True, slots=True)
class _Scale:
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
class _Row:
    subjects: tuple[int, ...]
    views: tuple[tuple[Seg, ...], ...]  # the segments of each (observer, subject) folded here
    owners: tuple[int, ...]  # the observer of each view


@dataclass(frozen=True, slots=True)
class _Band:
    observers: tuple[int, ...]
    rows: tuple[_Row, ...]
    quiet: tuple[int, int]  # fewest and most always-alive subjects among its observers
    down: tuple[tuple[float, float], ...]  # down spans of all its observers
    fold: str  # "same" (identical as drawn), "similar" (same order of states), "share"

    @property
    def height(self) -> int:
        return BAND_HEAD + ROW * max(1, len(self.rows)) + BAND_GAP


def _scale(trace: Trace) -> _Scale:
    t_start = (
        trace.t0 - min(2.0, max(0.0, trace.t0 - trace.launched)) if trace.launched else trace.t0
    )
    return _Scale(t_start, max(trace.end, t_start + 0.1), trace.t0)


def _views(trace: Trace, views: Views, scale: _Scale) -> list[_View]:
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


# ---- folding ---------------------------------------------------------------------------------


def _exact_key(scale: _Scale) -> _Key:
    """Spans (segments or down spans) as drawn: their ends rounded to the pixel."""
    return lambda spans: tuple((round(scale.x(s[0])), round(scale.x(s[1])), *s[2:]) for s in spans)


def _shape_key(scale: _Scale) -> _Key:
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


def _fold(views: list[_View], row_key: _Key, down_key: _Key, fold: str) -> list[_Band]:
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
            _Row(
                subjects,
                tuple(segs for _, m in members for segs in m[k]),
                tuple(v.observer for v, m in members for _ in m[k]),
            )
            for k, (_, subjects) in enumerate(row_keys)
        )
        quiet = [v.quiet for v, _ in members]
        down = tuple(span for v, _ in members for span in v.down)
        observers = tuple(v.observer for v, _ in members)
        bands.append(_Band(observers, rows_out, (min(quiet), max(quiet)), down, fold))
    return bands


def _bands(trace: Trace, views: Views, scale: _Scale) -> list[_Band]:
    """Folded bands: identical rows first; by order of states when that is still too tall."""
    per_observer = _views(trace, views, scale)
    exact = _exact_key(scale)
    bands = _fold(per_observer, exact, exact, "same")
    if sum(max(1, len(b.rows)) for b in bands) > ROW_BUDGET:
        bands = _fold(per_observer, _shape_key(scale), len, "similar")
        if sum(b.height for b in bands) > HEIGHT_BUDGET:
            bands = [_by_subject(per_observer, scale)]
    return bands


def _by_subject(per_observer: list[_View], scale: _Scale) -> _Band:
    """One band for all observers, a row per subject: how many observers held each state."""
    always = ((scale.t_start, scale.t_end, "alive"),)
    changed: dict[int, dict[int, tuple[Seg, ...]]] = {}
    for v in per_observer:
        for s, segs in v.rows:
            changed.setdefault(s, {})[v.observer] = segs
    rows = tuple(
        _Row(
            (s,),
            tuple(by_o.get(v.observer, always) for v in per_observer if v.observer != s),
            tuple(v.observer for v in per_observer if v.observer != s),
        )
        for s, by_o in sorted(changed.items())
    )
    quiet = len(per_observer) - len(changed)
    down = tuple(span for v in per_observer for span in v.down)
    observers = tuple(v.observer for v in per_observer)
    return _Band(observers, rows, (quiet, quiet), down, "share")


# ---- drawing ---------------------------------------------------------------------------------


def timeline(trace: Trace) -> str:
    """The SVG (and a note when observers were left out or rows folded) for one trace."""
    views = Views(trace)
    scale = _scale(trace)
    bands = _bands(trace, views, scale)
    shown = bands[:MAX_BANDS]
    faults = [f for f in _fault_spans(trace) if scale.shows(f[0], f[1])]
    boxes = [_label_box(scale, f[0], f[3]) for f in faults]
    lane_of = lanes(boxes)
    bottom = TOP + sum(b.height for b in shown)
    height = bottom + 6 + LANE * (max(lane_of) + 1 if lane_of else 0) + 4
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='timeline' width='{WIDTH}' "
        f"height='{height}' viewBox='0 0 {WIDTH} {height}'>",
        *_axis(scale, bottom),
    ]
    for (a, b, kind, label), (xl, _), lane in zip(faults, boxes, lane_of, strict=True):
        color = FAULT_COLORS.get(kind, "#000")
        xa = scale.x(a)
        out.append(
            f"<rect x='{xa:.1f}' y='20' width='{max(1.5, scale.x(b) - xa):.1f}' "
            f"height='{bottom - 20}' fill='{color}' opacity='0.10'>"
            f"<title>{escape(label)}</title></rect>"
            f"<text x='{xl:.1f}' y='{bottom + 6 + LANE * lane + 9}' fill='{color}'>"
            f"{escape(label)}</text>"
        )
    y = TOP
    for band in shown:
        out += _band(scale, band, y)
        y += band.height
    out.append("</svg>")
    return "\n".join(out + _notes(bands))


NOTES = {
    "similar": "Many rows: a row folds the views whose states came in the same order at about "
    "the same time; its height is split by how many of them held each state at each moment.",
    "share": "Too many distinct views to draw one by one: a row per subject, its height split "
    "by how many observers held it in each state at each moment.",
}


def _notes(bands: list[_Band]) -> list[str]:
    out = [f"<p class='muted'>{NOTES[f]}</p>" for f in sorted({b.fold for b in bands} & set(NOTES))]
    if len(bands) > MAX_BANDS:
        left = sum(len(b.observers) for b in bands[MAX_BANDS:])
        out.append(f"<p class='muted'>{left} more observers not shown.</p>")
    return out


def _label_box(scale: _Scale, t: float, label: str) -> tuple[float, float]:
    """Where a fault label goes (left, right pixels): at its start, kept inside the picture."""
    w = len(label) * CHAR_PX
    left = min(scale.x(t) + 2, WIDTH - 2 - w)
    return (max(2.0, left), max(2.0, left) + w)


def _axis(scale: _Scale, bottom: int) -> list[str]:
    """A grid line and a label every step of whole seconds after the start."""
    lo, hi = scale.t_start - scale.t0, scale.t_end - scale.t0
    step = tick_step(lo, hi, PLOT_W / (hi - lo), "s", minimum=1)
    out = []
    for v in ticks(lo, hi, step):
        x = scale.x(scale.t0 + v)
        out.append(
            f"<line x1='{x:.1f}' y1='20' x2='{x:.1f}' y2='{bottom}' stroke='#eee'/>"
            f"<text x='{x:.1f}' y='14' text-anchor='middle'>{tick_label(v, step, 's')}</text>"
        )
    return out


def _band_label(band: _Band) -> str:
    lo, hi = band.quiet
    alive = "subjects always alive" if band.fold == "share" else "always alive"
    quiet = f" (+{lo}{DASH}{hi} {alive})" if lo != hi else f" (+{lo} {alive})" if lo else ""
    obs = band.observers
    if len(obs) == 1:
        return f"node {obs[0]}{'' if band.rows else ': nothing changed'}{quiet}"
    how = {"same": "same view", "similar": "similar view (times differ)"}.get(
        band.fold, "a row per subject, split by how many held it in each state"
    )
    what = "" if band.rows or band.fold != "same" else ", nothing changed"
    return f"observers {id_ranges(obs)} ({len(obs)}): {how}{what}{quiet}"


def _band(scale: _Scale, band: _Band, y: int) -> list[str]:
    """One (folded) band at height ``y``: its label, when it was down, a row per subject."""
    out = [f"<text x='4' y='{y + 10}' font-weight='600'>{escape(_band_label(band))}</text>"]
    y += BAND_HEAD
    h = ROW * max(1, len(band.rows))
    n = len(band.observers)
    drawn: dict[tuple[int, int], int] = {}
    for a, b in band.down:
        xa, xb = round(scale.x(a)), round(scale.x(b))
        drawn[(xa, xb)] = drawn.get((xa, xb), 0) + 1
    for (xa, xb), count in drawn.items():
        out.append(
            f"<rect x='{xa}' y='{y}' width='{max(1, xb - xa)}' height='{h}' fill='#000' "
            f"opacity='{max(0.05, 0.25 * count / n):.2f}'><title>{_who(band)} not running"
            "</title></rect>"
        )
    if not band.rows:
        out.append(
            f"<rect x='{LEFT}' y='{y + 2}' width='{PLOT_W}' height='{ROW - 3}' "
            f"fill='{COLORS['alive']}' opacity='0.35'/>"
        )
    for k, row in enumerate(band.rows):
        out += _row(scale, band, row, y + k * ROW)
    return out


def _who(band: _Band) -> str:
    obs = band.observers
    return f"node {obs[0]}" if len(obs) == 1 else f"observers {id_ranges(obs)}"


def _row(scale: _Scale, band: _Band, row: _Row, y: int) -> list[str]:
    """How the band's observers saw the row's subjects, with a tick at the first death."""
    subj = id_ranges(row.subjects)
    fits = int((LEFT - 8) / SMALL_PX)
    short = subj if len(subj) <= fits else subj[: fits - 1] + "…"
    out = [
        f"<text x='{LEFT - 4}' y='{y + ROW - 1}' text-anchor='end' style='font-size:8px'>"
        f"<title>{escape(subj)}</title>{escape(short)}</text>"
    ]
    exact = _exact_key(scale)
    if len({exact(v) for v in row.views}) == 1:
        who = _who(band)
        for a, b, st in row.views[0]:
            xa = scale.x(a)
            out.append(
                f"<rect x='{xa:.1f}' y='{y + 1}' width='{max(0.5, scale.x(b) - xa):.1f}'"
                f" height='{ROW - 2}' fill='{COLORS.get(st, '#e0e0e0')}'>"
                f"<title>{escape(who)} sees {escape(subj)}: {escape(st or 'unknown')} from "
                f"{a - scale.t0:.2f} s</title></rect>"
            )
    else:
        out.append(f"<g><title>{escape(_stack_title(scale, band, row))}</title>")
        out += _stacked(scale, row.views, y + 1, ROW - 2)
        out.append("</g>")
    deaths = [
        a for v in row.views for a, _, st in v if st in ("dead", "left") and a > scale.t_start
    ]
    if deaths:
        out.append(
            f"<text x='{scale.x(min(deaths)):.1f}' y='{y + ROW - 1}' style='font-size:8px' "
            "text-anchor='middle'>▼</text>"
        )
    return out


def _stack_title(scale: _Scale, band: _Band, row: _Row) -> str:
    """When the row's views entered each state, and which observers held it."""
    entered: dict[str, list[float]] = {}
    holders: dict[str, set[int]] = {}
    for v, o in zip(row.views, row.owners, strict=True):
        for a, _, st in v[1:]:
            entered.setdefault(st or "unknown", []).append(a - scale.t0)
            holders.setdefault(st or "unknown", set()).add(o)
    spans = "; ".join(
        f"{st} from {min(ts):.2f}{DASH}{max(ts):.2f} s (by {id_ranges(holders[st])})"
        for st, ts in entered.items()
    )
    return f"{_who(band)} see {id_ranges(row.subjects)} ({len(row.views)} views): {spans}"


def _stacked(scale: _Scale, views: Sequence[Sequence[Seg]], y: float, h: float) -> list[str]:
    """The share of ``views`` in each state over time."""
    changes = [(scale.x(a), k, st) for k, v in enumerate(views) for a, _, st in v]
    colors = [(st, COLORS[st]) for st in STACK]
    return stacked_steps(changes, len(views), colors, float(LEFT + PLOT_W), y, h)


# ---- what the window shows --------------------------------------------------------------------


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


def _fault_spans(trace: Trace) -> list[tuple[float, float, str, str]]:
    """(from, to, kind, label) of every fault: kill/stop/pause until the node is back,
    partition/loss/delay until the heal (or the next one of the same kind)."""
    out = []
    acts = sorted(trace.actions, key=lambda a: a.t)
    for k, a in enumerate(acts):
        if a.kind in ("kill", "stop", "pause"):
            end = next(
                (
                    b.t
                    for b in acts[k + 1 :]
                    if set(b.nodes) & set(a.nodes) and b.kind in ("resume", "restart")
                ),
                trace.end,
            )
        elif a.kind in ("partition", "loss", "delay"):
            end = next((b.t for b in acts[k + 1 :] if b.kind in ("heal", a.kind)), trace.end)
        else:
            continue
        label = action_label(a.kind, a.nodes, a.groups, a.value, len(trace.initial))
        out.append((a.t, end, a.kind, label))
    return out
