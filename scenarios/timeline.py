"""The timeline of ``report.html``: an inline SVG of every observer's view of the members.

Rules:
1. One band per observer (the first ``MAX_BANDS``); inside it one row per subject whose state
   changed in that observer's view (the others are counted in the band's label), coloured by
   state. Fault intervals are shaded over every band; each first ``dead`` is marked with a tick.
2. The window starts up to two seconds before the start (from the launch) and ends with the
   trace; axis labels are seconds after the start. Text is escaped.
"""

from __future__ import annotations

from dataclasses import dataclass
from html import escape

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
FAULT_COLORS = {
    "kill": "#000000",
    "stop": "#5d4037",
    "pause": "#7b1fa2",
    "partition": "#1565c0",
    "loss": "#00838f",
    "delay": "#00838f",
}
MAX_BANDS = 64
WIDTH = 1000
LEFT = 90
ROW = 7
PLOT_W = WIDTH - LEFT - 10  # the plot area right of the labels, pixels


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
class _Band:
    observer: int
    subjects: tuple[int, ...]  # the members whose state changed in this observer's view
    quiet: int  # how many others it always held alive


def _scale(trace: Trace) -> _Scale:
    t_start = (
        trace.t0 - min(2.0, max(0.0, trace.t0 - trace.launched)) if trace.launched else trace.t0
    )
    return _Scale(t_start, max(trace.end, t_start + 0.1), trace.t0)


def _bands(trace: Trace, views: Views, t_start: float) -> list[_Band]:
    bands = []
    for o in trace.all_nodes()[:MAX_BANDS]:
        subjects = tuple(
            sorted(
                s
                for s in views.subjects_of.get(o, ())
                if s != o
                and any(st != "alive" and t >= t_start for t, st in views.transitions(o, s))
            )
        )
        quiet = len(views.subjects_of.get(o, set()) - {o}) - len(subjects)
        bands.append(_Band(o, subjects, quiet))
    return bands


def timeline(trace: Trace) -> str:
    """The SVG (and a note when observers were left out) for one trace."""
    views = Views(trace)
    scale = _scale(trace)
    bands = _bands(trace, views, scale.t_start)
    height = 30 + sum(16 + ROW * max(1, len(b.subjects)) + 6 for b in bands) + 20
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        f"viewBox='0 0 {WIDTH} {height}'>",
        *_axis(scale, height),
        *_fault_shading(trace, scale, height),
    ]
    y = 24
    for band in bands:
        out += _band(trace, views, scale, band, y)
        y += 14 + ROW * max(1, len(band.subjects)) + 6
    out.append("</svg>")
    if len(trace.all_nodes()) > MAX_BANDS:
        out.append(
            f"<p class='muted'>showing the first {MAX_BANDS} observers of "
            f"{len(trace.all_nodes())}</p>"
        )
    return "\n".join(out)


def _axis(scale: _Scale, height: int) -> list[str]:
    """A grid line and a label (seconds after the start) every nice step."""
    out = []
    step = _nice_step(scale.t_end - scale.t_start)
    k = int(scale.t_start // step) * step
    while k <= scale.t_end:
        if k >= scale.t_start:
            x = scale.x(k)
            out.append(
                f"<line x1='{x:.1f}' y1='20' x2='{x:.1f}' y2='{height - 16}' stroke='#eee'/>"
            )
            out.append(f"<text x='{x:.1f}' y='14' text-anchor='middle'>{k - scale.t0:+.0f}s</text>")
        k += step
    return out


def _fault_shading(trace: Trace, scale: _Scale, height: int) -> list[str]:
    """Each fault interval shaded over every band, labelled at the bottom."""
    out = []
    for a, b, kind, label in _fault_spans(trace):
        if not scale.shows(a, b):
            continue
        color = FAULT_COLORS.get(kind, "#000")
        xa = scale.x(a)
        out.append(
            f"<rect x='{xa:.1f}' y='20' width='{max(1.5, scale.x(b) - xa):.1f}' "
            f"height='{height - 36}' fill='{color}' opacity='0.10'>"
            f"<title>{escape(label)}</title></rect>"
        )
        out.append(f"<text x='{xa + 2:.1f}' y='{height - 4}' fill='{color}'>{escape(label)}</text>")
    return out


def _band(trace: Trace, views: Views, scale: _Scale, band: _Band, y: int) -> list[str]:
    """One observer's band at height ``y``: its label, when it was down, a row per subject."""
    o = band.observer
    label = f"node {o}" + (f" (+{band.quiet} always alive)" if band.quiet else "")
    out = [f"<text x='4' y='{y + 11}' font-weight='600'>{escape(label)}</text>"]
    y += 14
    h = ROW * max(1, len(band.subjects))
    for a, b in _down_spans(trace, o):
        if scale.shows(a, b):
            out.append(
                f"<rect x='{scale.x(a):.1f}' y='{y}' width='{max(1, scale.x(b) - scale.x(a)):.1f}' "
                f"height='{h}' fill='#000' opacity='0.25'><title>node {o} not "
                "running</title></rect>"
            )
    if not band.subjects:
        out.append(
            f"<rect x='{LEFT}' y='{y + 2}' width='{PLOT_W}' height='{ROW - 3}' "
            f"fill='{COLORS['alive']}' opacity='0.35'/>"
        )
    for k, s in enumerate(band.subjects):
        out += _subject_row(views, scale, o, s, y + k * ROW)
    return out


def _subject_row(views: Views, scale: _Scale, o: int, s: int, y: int) -> list[str]:
    """How observer ``o`` saw subject ``s`` over time, with a tick at its first death."""
    out = [f"<text x='{LEFT - 4}' y='{y + ROW - 1}' text-anchor='end' font-size='8'>{s}</text>"]
    segs = _segments(views, o, s, scale.t_start, scale.t_end)
    for a, b, st in segs:
        xa = scale.x(a)
        out.append(
            f"<rect x='{xa:.1f}' y='{y + 1}' width='{max(0.5, scale.x(b) - xa):.1f}'"
            f" height='{ROW - 2}' fill='{COLORS.get(st, '#e0e0e0')}'>"
            f"<title>node {o} sees {s}: {escape(st or 'unknown')} from "
            f"{a - scale.t0:+.2f}s</title></rect>"
        )
    dead = next((a for a, _, st in segs if st in ("dead", "left") and a > scale.t_start), None)
    if dead is not None:
        out.append(
            f"<text x='{scale.x(dead):.1f}' y='{y + ROW - 1}' font-size='8' "
            "text-anchor='middle'>▼</text>"
        )
    return out


def _nice_step(span: float) -> float:
    for s in (0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600):
        if span / s <= 20:
            return float(s)
    return 1200.0


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
            out.append((a.t, end, a.kind, f"{a.kind} {','.join(map(str, a.nodes))}"))
        elif a.kind in ("partition", "loss", "delay"):
            end = next((b.t for b in acts[k + 1 :] if b.kind in ("heal", a.kind)), trace.end)
            what = (
                " | ".join(",".join(map(str, g)) for g in a.groups)
                if a.kind == "partition"
                else f"{a.value:g} on {','.join(map(str, a.nodes))}"
            )
            out.append((a.t, end, a.kind, f"{a.kind} {what}"))
    return out
