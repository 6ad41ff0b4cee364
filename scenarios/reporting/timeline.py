"""The timeline of the report: an inline SVG of every observer's view of the members.

Rules:
1. A band per observer, in it a row per subject whose state changed in that view (the others
   are counted in the band's label), coloured by state. Fault intervals are shaded over every
   band and labelled at the bottom, on as many lines as the labels need; a row's first
   ``dead`` is marked with a tick.
2. Fold before drawing: ``folding`` groups the views into bands and rows (and owns the window,
   its scale and the geometry the folds measure in); this module only draws them, a row of
   several distinct views stacked by state, and at most ``MAX_BANDS`` bands with a note.
3. The axis is whole seconds after the start, at a step whose labels cannot overlap.
   Text is escaped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from ..judge.trace import Trace, Views
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
from .folding import (
    BAND_HEAD,
    LEFT,
    PLOT_W,
    ROW,
    WIDTH,
    Band,
    Row,
    Scale,
    Seg,
    exact_key,
    fold_bands,
    scale_of,
)

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
    "cut": "#3949ab",
    "clock": "#ef6c00",
    "disk": "#6d4c41",
}
MAX_BANDS = 64
TOP = 24  # the axis labels above the first band
LANE = 13  # one line of fault labels
SMALL_PX = 4.8  # estimated width of a character of 8 px text


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


# ---- drawing ---------------------------------------------------------------------------------


def timeline(trace: Trace) -> str:
    """The SVG (and a note when observers were left out or rows folded) for one trace."""
    views = Views(trace)
    scale = scale_of(trace)
    bands = fold_bands(trace, views, scale)
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
        out += _band(scale, band, y, trace.agents)
        y += band.height
    out.append("</svg>")
    return "\n".join(out + _notes(bands))


NOTES = {
    "similar": "Many rows: a row folds the views whose states came in the same order at about "
    "the same time; its height is split by how many of them held each state at each moment.",
    "share": "Too many distinct views to draw one by one: a row per subject, its height split "
    "by how many observers held it in each state at each moment.",
}


def _notes(bands: list[Band]) -> list[str]:
    out = [f"<p class='muted'>{NOTES[f]}</p>" for f in sorted({b.fold for b in bands} & set(NOTES))]
    if len(bands) > MAX_BANDS:
        left = sum(len(b.observers) for b in bands[MAX_BANDS:])
        out.append(f"<p class='muted'>{left} more observers not shown.</p>")
    return out


def _label_box(scale: Scale, t: float, label: str) -> tuple[float, float]:
    """Where a fault label goes (left, right pixels): at its start, kept inside the picture."""
    w = len(label) * CHAR_PX
    left = min(scale.x(t) + 2, WIDTH - 2 - w)
    return (max(2.0, left), max(2.0, left) + w)


def _axis(scale: Scale, bottom: int) -> list[str]:
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


def _band_label(band: Band, agents: Mapping[int, str]) -> str:
    lo, hi = band.quiet
    alive = "subjects always alive" if band.fold == "share" else "always alive"
    quiet = f" (+{lo}{DASH}{hi} {alive})" if lo != hi else f" (+{lo} {alive})" if lo else ""
    obs = band.observers
    if len(obs) == 1:
        who = f"{agents[obs[0]]} (Serf agent)" if obs[0] in agents else f"node {obs[0]}"
        return f"{who}{'' if band.rows else ': nothing changed'}{quiet}"
    how = {"same": "same view", "similar": "similar view (times differ)"}.get(
        band.fold, "a row per subject, split by how many held it in each state"
    )
    what = "" if band.rows or band.fold != "same" else ", nothing changed"
    named = [agents[o] for o in obs if o in agents]
    serf = f"; Serf agents {', '.join(named)}" if named else ""
    return f"observers {id_ranges(obs)} ({len(obs)}{serf}): {how}{what}{quiet}"


def _band(scale: Scale, band: Band, y: int, agents: Mapping[int, str]) -> list[str]:
    """One (folded) band at height ``y``: its label (a Serf agent by its name), when it was
    down, a row per subject."""
    label = _band_label(band, agents)
    out = [f"<text x='4' y='{y + 10}' font-weight='600'>{escape(label)}</text>"]
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


def _who(band: Band) -> str:
    obs = band.observers
    return f"node {obs[0]}" if len(obs) == 1 else f"observers {id_ranges(obs)}"


def _row(scale: Scale, band: Band, row: Row, y: int) -> list[str]:
    """How the band's observers saw the row's subjects, with a tick at the first death."""
    subj = id_ranges(row.subjects)
    fits = int((LEFT - 8) / SMALL_PX)
    short = subj if len(subj) <= fits else subj[: fits - 1] + "…"
    out = [
        f"<text x='{LEFT - 4}' y='{y + ROW - 1}' text-anchor='end' style='font-size:8px'>"
        f"<title>{escape(subj)}</title>{escape(short)}</text>"
    ]
    exact = exact_key(scale)
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


def _stack_title(scale: Scale, band: Band, row: Row) -> str:
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


def _stacked(scale: Scale, views: Sequence[Sequence[Seg]], y: float, h: float) -> list[str]:
    """The share of ``views`` in each state over time."""
    changes = [(scale.x(a), k, st) for k, v in enumerate(views) for a, _, st in v]
    colors = [(st, COLORS[st]) for st in STACK]
    return stacked_steps(changes, len(views), colors, float(LEFT + PLOT_W), y, h)


# ---- the faults shaded over the bands -----------------------------------------------------------


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
        elif a.kind in ("cut", "clock", "disk"):  # cuts add up; a clock or disk is reset
            again = a.kind if a.kind != "cut" else "heal"
            end = next(
                (
                    b.t
                    for b in acts[k + 1 :]
                    if b.kind == "heal" or (b.kind == again and b.nodes == a.nodes)
                ),
                trace.end,
            )
        else:
            continue
        nodes = len(trace.initial) - len(trace.agents)  # "on all": every node, no Serf agent
        label = action_label(
            a.kind,
            a.nodes,
            a.groups,
            a.value,
            nodes,
            rate=a.rate,
            pool=a.pool,
            errors=a.errors,
            full=a.full,
        )
        out.append((a.t, end, a.kind, label))
    return out
