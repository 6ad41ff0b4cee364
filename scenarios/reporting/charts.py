"""Pieces shared by the report pages: figures and id ranges as text, axis ticks, label lanes,
stacked shares over time, CDFs, the pass/fail strip.

Rules:
1. Pure functions from numbers to SVG or text; no file, clock or page layout here. The SVG
   fragments and ``figure`` come out escaped, ready for the page; the other text helpers
   return plain text, which their callers escape.
2. Text width is estimated (``CHAR_PX`` pixels a character at 11 px), never measured: ticks and
   labels keep that much room between them, so they never overlap on the page.
3. Tick labels are multiples of the step, written exactly ("0 s", "5 s", "-2 s", "0.5 s"): never
   "-0", never a rounded value of a point that is not on the label.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

__all__ = [
    "CHAR_PX",
    "DASH",
    "Cell",
    "Series",
    "action_label",
    "cdf_chart",
    "figure",
    "id_ranges",
    "lanes",
    "percent",
    "stacked_steps",
    "strip",
    "tick_label",
    "tick_step",
    "ticks",
]

CHAR_PX = 6.5  # estimated width of one character of 11 px text, pixels
STEPS = (0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200)
TICK_GAP = 10.0  # pixels kept free between two tick labels
DASH = "\u2013"  # en dash, for id ranges such as 3-29
VERDICT_COLORS = {"pass": "#2e7d32", "fail": "#c62828", "error": "#6d4c41"}


# ---- text -----------------------------------------------------------------------------------


def id_ranges(ids: Iterable[int]) -> str:
    """Node ids as short text: runs of three or more become ranges ("0-2, 5, 7-9", en dashes)."""
    xs = sorted(set(ids))
    parts: list[str] = []
    k = 0
    while k < len(xs):
        j = k
        while j + 1 < len(xs) and xs[j + 1] == xs[j] + 1:
            j += 1
        if j - k >= 2:
            parts.append(f"{xs[k]}{DASH}{xs[j]}")
        else:
            parts.extend(str(x) for x in xs[k : j + 1])
        k = j + 1
    return ", ".join(parts)


def figure(x: Any, unit: str = "", none: str = "\u2014") -> str:
    """A figure with its unit, escaped: "12.40 s", "3 events"; ``none`` when absent."""
    if x is None:
        return escape(none)
    if isinstance(x, bool) or not isinstance(x, int | float):
        return escape(str(x))
    text = f"{x:.2f}" if isinstance(x, float) and unit != "events" else f"{x:g}"
    unit = "event" if unit == "events" and x == 1 else unit
    return f"{text} {escape(unit)}" if unit else text


def percent(share: Any) -> str:
    """A share 0..1 as a percentage without trailing zeros: "99.9 %", "100 %"."""
    if isinstance(share, bool) or not isinstance(share, int | float):
        return "\u2014"
    return f"{100 * share:.2f}".rstrip("0").rstrip(".") + " %"


def lanes(spans: Sequence[tuple[float, float]], gap: float = 6.0) -> list[int]:
    """For each pixel span (left, right), the lowest lane where it overlaps no earlier span."""
    ends: list[float] = []  # right end of the last span placed in each lane
    out = []
    for left, right in spans:
        lane = next((k for k, end in enumerate(ends) if end + gap <= left), len(ends))
        if lane == len(ends):
            ends.append(right)
        else:
            ends[lane] = right
        out.append(lane)
    return out


def action_label(
    kind: str,
    nodes: Sequence[int],
    groups: Sequence[Sequence[int]] = (),
    value: float = 0.0,
    cluster: int | None = None,
    *,
    rate: float = 1.0,
    pool: str = "",
    errors: float = 0.0,
    full: bool = False,
) -> str:
    """An action as a person writes it: "partition 0, 1 | 2-4", "loss 10.6 % on all",
    "cut 0 -> 3", "clock 2 -3600 s x1.0", "disk 1 m1 200 ms 10 % full"."""
    on = "all" if cluster and sorted(nodes) == list(range(cluster)) else id_ranges(nodes)
    if kind == "partition":
        return "partition " + " | ".join(id_ranges(g) for g in groups)
    if kind == "cut" and len(groups) == 2:
        return f"cut {id_ranges(groups[0])} -> {id_ranges(groups[1])}"
    if kind == "clock":
        times = f"{rate:g}" if "." in f"{rate:g}" else f"{rate:.1f}"
        return f"clock {on} {value:g} s x{times}"
    if kind == "disk":
        return f"disk {on} {pool} {value:g} ms {errors:g} %" + (" full" if full else "")
    if kind == "loss":
        return f"loss {value:g} % on {on}"
    if kind == "delay":
        return f"delay {value:g} ms on {on}"
    if kind == "http":
        return f"http on node {on}" if nodes else "http"
    return f"{kind} {on}".strip()


# ---- axes -----------------------------------------------------------------------------------


def tick_label(value: float, step: float, unit: str) -> str:
    """A tick's text: ``value`` is a multiple of ``step``; whole when the step is whole."""
    if step >= 1:
        text = str(round(value))
    else:
        text = f"{value:.1f}"
        if text == "-0.0":
            text = "0.0"
    return f"{text} {unit}" if unit else text


def ticks(lo: float, hi: float, step: float) -> list[float]:
    """The multiples of ``step`` inside ``lo..hi`` (a hair of float slack at both ends)."""
    first = math.ceil(lo / step - 1e-9)
    last = math.floor(hi / step + 1e-9)
    return [round(k * step, 6) + 0.0 for k in range(first, last + 1)]


def tick_step(lo: float, hi: float, px_per_unit: float, unit: str, minimum: float = 0.1) -> float:
    """The smallest nice step (>= ``minimum``) whose labels on ``lo..hi`` cannot overlap."""
    for step in STEPS:
        if step < minimum:
            continue
        # the widest label is at one end: the most digits, or the minus sign
        ends = (math.ceil(lo / step - 1e-9) * step, math.floor(hi / step + 1e-9) * step)
        widest = max(len(tick_label(v, step, unit)) for v in ends) * CHAR_PX
        if step * px_per_unit >= widest + TICK_GAP:
            return float(step)
    return float(STEPS[-1])


# ---- shares over time ------------------------------------------------------------------------


def stacked_steps(
    changes: Sequence[tuple[float, int, Hashable]],
    n: int,
    colors: Sequence[tuple[Hashable, str]],
    x_end: float,
    y: float,
    h: float,
) -> list[str]:
    """How ``n`` items shared their states over x: one stacked step area (a path) per state.

    ``changes`` are (x pixel, item, new state), each item's in order; ``colors`` lists the
    states top to bottom. Changes within a tenth of a pixel are drawn as one.
    """
    ordered = sorted(((round(x, 1), k, st) for x, k, st in changes), key=lambda c: c[0])
    current: list[Hashable] = [None] * n
    xs: list[float] = []
    counts: list[tuple[int, ...]] = []
    for i, (x, k, st) in enumerate(ordered):  # the sort is stable: an item's order is kept
        current[k] = st
        if i + 1 < len(ordered) and ordered[i + 1][0] == x:
            continue  # several items change at this x: count once they all have
        vec = tuple(current.count(state) for state, _ in colors)
        if not counts or counts[-1] != vec:
            xs.append(x)
            counts.append(vec)
    xs.append(x_end)
    out = []
    for j, (_, color) in enumerate(colors):
        if not any(c[j] for c in counts):
            continue
        tops = [y + h * sum(c[:j]) / n for c in counts]
        bots = [y + h * sum(c[: j + 1]) / n for c in counts]
        path = [f"M{xs[0]:.1f},{tops[0]:.2f}"]
        path += [f"H{xs[i + 1]:.1f}V{tops[i + 1]:.2f}" for i in range(len(tops) - 1)]
        path.append(f"H{xs[-1]:.1f}V{bots[-1]:.2f}")
        path += [f"H{xs[i]:.1f}V{bots[i - 1]:.2f}" for i in range(len(bots) - 1, 0, -1)]
        out.append(f"<path d='{''.join(path)}H{xs[0]:.1f}Z' fill='{color}'/>")
    return out


# ---- the cumulative distribution of a figure over runs ----------------------------------------


@dataclass(frozen=True, slots=True)
class Series:
    """One curve: a figure's value in each run (None: it never happened), and its colour."""

    name: str
    values: tuple[float | None, ...]
    color: str


CDF_W, CDF_H = 560, 250
_PL, _PR, _PT, _PB = 48, 96, 54, 28  # plot margins: the right one holds the "never" column


def cdf_chart(series: Sequence[Series], bound: float | None, unit: str = "s") -> str:
    """An SVG of each series' CDF over the runs, the bound as a dashed line, "never" at right.

    Runs where the figure never happened count in the total, so a curve that ends below
    100 % climbs the rest of the way in the "never" column right of the axis.
    """
    finite = [v for s in series for v in s.values if v is not None]
    top = max([*finite, bound or 0.0, 0.0])
    hi = top * 1.05 if top > 0 else 1.0
    pw, ph = CDF_W - _PL - _PR, CDF_H - _PT - _PB
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='cdf' width='{CDF_W}' height='{CDF_H}' "
        f"viewBox='0 0 {CDF_W} {CDF_H}'>",
        *_cdf_axes(hi, pw, ph, unit),
    ]
    if bound is not None and bound > 0:
        x = _PL + pw * bound / hi
        out.append(
            f"<line x1='{x:.1f}' y1='{_PT}' x2='{x:.1f}' y2='{_PT + ph}' stroke='#c62828' "
            f"stroke-dasharray='4 3'/><text x='{x:.1f}' y='{_PT - 4}' fill='#c62828' "
            f"text-anchor='middle'>"
            f"bound {bound:g} {escape(unit)}</text>"
        )
    x, y = _PL, 4  # the legend: one entry after the other, on a second line when full
    for s in series:
        out += _cdf_curve(s, hi, pw, ph, unit)
        text = _legend_text(s)
        w = int(len(text) * CHAR_PX) + 30
        if x > _PL and x + w > CDF_W:
            x, y = _PL, y + 15
        out.append(
            f"<rect x='{x}' y='{y}' width='10' height='10' fill='{s.color}'/>"
            f"<text x='{x + 14}' y='{y + 9}'>{escape(text)}</text>"
        )
        x += w
    out.append("</svg>")
    return "".join(out)


def _legend_text(s: Series) -> str:
    never = sum(1 for v in s.values if v is None)
    return f"{s.name} (n={len(s.values)}" + (f", never {never})" if never else ")")


def _cdf_axes(hi: float, pw: int, ph: int, unit: str) -> list[str]:
    out = []
    for frac in (0.0, 0.5, 0.9, 1.0):
        y = _PT + ph * (1 - frac)
        out.append(
            f"<line x1='{_PL}' y1='{y:.1f}' x2='{_PL + pw}' y2='{y:.1f}' stroke='#eee'/>"
            f"<text x='{_PL - 4}' y='{y + 4:.1f}' text-anchor='end'>{round(frac * 100)} %</text>"
        )
    step = tick_step(0.0, hi, pw / hi, unit)
    for v in ticks(0.0, hi, step):
        x = _PL + pw * v / hi
        out.append(
            f"<line x1='{x:.1f}' y1='{_PT}' x2='{x:.1f}' y2='{_PT + ph}' stroke='#eee'/>"
            f"<text x='{x:.1f}' y='{_PT + ph + 14}' text-anchor='middle'>"
            f"{escape(tick_label(v, step, unit))}</text>"
        )
    nx = _PL + pw + 12
    out.append(
        f"<rect x='{nx}' y='{_PT}' width='44' height='{ph}' fill='#f5f5f5'/>"
        f"<text x='{nx + 22}' y='{_PT + ph + 14}' text-anchor='middle'>never</text>"
        f"<line x1='{_PL}' y1='{_PT + ph}' x2='{_PL + pw}' y2='{_PT + ph}' stroke='#999'/>"
    )
    return out


def _cdf_curve(s: Series, hi: float, pw: int, ph: int, unit: str) -> list[str]:
    total = len(s.values)
    if not total:
        return []
    done = sorted(v for v in s.values if v is not None)

    def y(count: int) -> float:
        return _PT + ph * (1 - count / total)

    pts = [f"M{_PL},{y(0):.1f}"]
    for k, v in enumerate(done):
        x = _PL + pw * v / hi
        pts.append(f"H{x:.1f}V{y(k + 1):.1f}")
    pts.append(f"H{_PL + pw}")
    if len(done) < total:
        pts.append(f"H{_PL + pw + 34}V{y(total):.1f}")
    title = f"{s.name}: {len(done)} of {total} runs" + (
        f", max {done[-1]:g} {unit}" if done else ""
    )
    return [
        f"<path d='{''.join(pts)}' fill='none' stroke='{s.color}' stroke-width='1.6'>"
        f"<title>{escape(title)}</title></path>"
    ]


# ---- one cell per run ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Cell:
    """One run in the pass/fail strip: its verdict, its tooltip, and a link (real mode)."""

    verdict: str  # "pass", "fail" or "error"
    title: str
    href: str | None = None


def strip(cells: Sequence[Cell], width: int = 1000) -> str:
    """An SVG with one small square per run, in order, coloured by verdict, wrapped in rows."""
    size = 12 if len(cells) <= 200 else 8
    pitch = size + 2
    per_row = max(1, min(len(cells), width // pitch))
    rows = max(1, math.ceil(len(cells) / per_row))
    w, h = per_row * pitch, rows * pitch
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' class='strip' width='{w}' height='{h}' "
        f"viewBox='0 0 {w} {h}'>"
    ]
    for k, c in enumerate(cells):
        verdict = c.verdict if c.verdict in VERDICT_COLORS else "error"
        x, y = (k % per_row) * pitch, (k // per_row) * pitch
        rect = (
            f"<rect class='cell {verdict}' x='{x}' y='{y}' width='{size}' height='{size}' "
            f"fill='{VERDICT_COLORS[verdict]}'><title>{escape(c.title)}</title></rect>"
        )
        if c.href is not None:
            rect = f"<a href='{escape(c.href, quote=True)}'>{rect}</a>"
        out.append(rect)
    out.append("</svg>")
    return "".join(out)
