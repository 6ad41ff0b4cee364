"""``report.html``: one self-contained page (inline CSS and SVG, no external references).

Rules:
1. The timeline has one band per observer; inside it one row per subject whose state changed
   in that observer's view (the others are counted in the band's label), coloured by state.
   Fault intervals are shaded over every band; each first ``dead`` is marked with a tick.
2. Everything shown comes from ``results.json``'s content plus the trace; text is escaped.
"""

from __future__ import annotations

import html
from typing import Any

from .trace import INF, Trace, Views

__all__ = ["render_report"]

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
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;margin:4px 0} td,th{border:1px solid #ddd;padding:3px 8px;
text-align:left;font-size:13px} th{background:#f5f5f5}
.pass{color:#2e7d32;font-weight:600} .fail{color:#c62828;font-weight:600}
.error{color:#c62828;font-weight:600} .not_applicable{color:#757575}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff}
.v-pass{background:#2e7d32} .v-fail{background:#c62828} .v-error{background:#6d4c41}
.legend span{display:inline-block;margin-right:12px} .sw{display:inline-block;width:12px;
height:12px;vertical-align:middle;margin-right:4px;border:1px solid #999}
svg text{font:11px system-ui,sans-serif} .muted{color:#757575}
"""


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x))


def _fmt(x: Any) -> str:
    if x is None:
        return "—"
    if isinstance(x, float):
        return f"{x:.3f}"
    return _e(x)


def _table(header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def render_report(results: dict[str, Any], trace: Trace | None) -> str:
    """The page for one run; ``trace`` None (an error before the start) omits the timeline."""
    verdict = str(results.get("verdict", "error"))
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{_e(results.get('scenario'))}: {verdict}</title><style>{CSS}</style></head><body>",
        f"<h1>{_e(results.get('scenario'))} <span class='verdict v-{_e(verdict)}'>"
        f"{_e(verdict.upper())}</span></h1>",
        f"<div class='muted'>{_e(results.get('description'))}</div>",
        f"<p>mode <b>{_e(results.get('mode'))}</b> · nodes <b>{_e(results.get('nodes'))}</b> · "
        f"seed <b>{_e(results.get('seed'))}</b> · duration <b>{_fmt(results.get('duration'))}"
        f"</b>s · source {_e(results.get('source'))}</p>",
    ]
    if results.get("error"):
        parts.append(f"<p class='error'>error: {_e(results['error'])}</p>")
    rows = [
        [
            f"<span class='{_e(x['status'])}'>{_e(x['status'])}</span>",
            _e(x["description"]),
            _fmt(x.get("measured")),
            _fmt(x.get("bound")),
            _e(x.get("detail")),
        ]
        for x in results.get("expectations", [])
    ]
    parts += [
        "<h2>Expectations</h2>",
        _table(["", "expectation", "measured", "bound", "detail"], rows),
    ]
    if trace is not None:
        parts += ["<h2>Timeline</h2>", _legend(), _timeline(trace)]
    rows = [
        [
            _e(d["step"]),
            _e(d["subject"]),
            _fmt(d["at"]),
            _fmt(d["first_suspect"]),
            _fmt(d["first_dead"]),
            _fmt(d["full_dead"]),
            _fmt(d["completeness"]),
        ]
        for d in results.get("detection", [])
    ]
    if rows:
        parts += [
            "<h2>Detection (seconds after the fault)</h2>",
            _table(
                [
                    "step",
                    "subject",
                    "at",
                    "first suspect",
                    "first dead",
                    "full dead",
                    "completeness",
                ],
                rows,
            ),
        ]
    conv = results.get("convergence", [])
    if conv:
        parts += [
            "<h2>Convergence</h2>",
            _table(
                ["after", "at", "seconds"],
                [[_e(c["step"]), _fmt(c.get("at")), _fmt(c["seconds"])] for c in conv],
            ),
        ]
    for key, title in (("false_suspicions", "False suspicions"), ("false_deaths", "False deaths")):
        fp = results.get(key, {})
        items = fp.get("events", [])[:20]
        parts.append(f"<h2>{title}: {_e(fp.get('count', 0))}</h2>")
        if items:
            parts.append(
                _table(
                    ["observer", "subject", "t", "episode since"],
                    [
                        [_e(i["observer"]), _e(i["subject"]), _fmt(i["t"]), _fmt(i["since"])]
                        for i in items
                    ],
                )
            )
    http_rows = [
        [
            _e(h["step"]),
            _e(h["node"]),
            _e(f"{h['method']} {h['path']}"),
            _fmt(h["at"]),
            _e(h["status"]),
            _fmt(h["elapsed"]),
            _e(h["error"]),
        ]
        for h in results.get("http", [])
    ]
    if http_rows:
        parts += [
            "<h2>HTTP requests</h2>",
            _table(["step", "node", "request", "sent at", "status", "seconds", "error"], http_rows),
        ]
    steps = results.get("steps", [])
    if steps:
        parts += [
            "<h2>Actions</h2>",
            _table(
                ["t", "kind", "step", "nodes"],
                [[_fmt(s["t"]), _e(s["kind"]), _e(s["step"]), _e(s["nodes"])] for s in steps],
            ),
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _legend() -> str:
    items = "".join(
        f"<span><i class='sw' style='background:{c}'></i>{_e(s or 'unknown')}</span>"
        for s, c in COLORS.items()
    )
    faults = "".join(
        f"<span><i class='sw' style='background:{c};opacity:.25'></i>{_e(k)}</span>"
        for k, c in FAULT_COLORS.items()
        if k != "delay"
    )
    return f"<div class='legend'>{items} · shaded: {faults} · <span>▼ first dead</span></div>"


def _timeline(trace: Trace) -> str:
    views = Views(trace)
    t_start = (
        trace.t0 - min(2.0, max(0.0, trace.t0 - trace.launched)) if trace.launched else trace.t0
    )
    t_end = max(trace.end, t_start + 0.1)
    span = t_end - t_start
    plot_w = WIDTH - LEFT - 10

    def x(t: float) -> float:
        return LEFT + plot_w * (min(max(t, t_start), t_end) - t_start) / span

    observers = trace.all_nodes()[:MAX_BANDS]
    bands: list[tuple[int, list[int], int]] = []
    for o in observers:
        subjects = sorted(
            s
            for s in views.subjects_of.get(o, ())
            if s != o and any(st != "alive" and t >= t_start for t, st in views.transitions(o, s))
        )
        quiet = len(views.subjects_of.get(o, set()) - {o}) - len(subjects)
        bands.append((o, subjects, quiet))
    height = 30 + sum(16 + ROW * max(1, len(s)) + 6 for _, s, _ in bands) + 20
    out = [
        f"<svg xmlns='http://www.w3.org/2000/svg' width='{WIDTH}' height='{height}' "
        f"viewBox='0 0 {WIDTH} {height}'>"
    ]
    # time axis
    step = _nice_step(span)
    k = int(t_start // step) * step
    while k <= t_end:
        if k >= t_start:
            out.append(
                f"<line x1='{x(k):.1f}' y1='20' x2='{x(k):.1f}' y2='{height - 16}' stroke='#eee'/>"
            )
            out.append(
                f"<text x='{x(k):.1f}' y='14' text-anchor='middle'>{k - trace.t0:+.0f}s</text>"
            )
        k += step
    # faults, shaded over every band
    for a, b, kind, label in _fault_spans(trace):
        if b <= t_start or a >= t_end:
            continue
        color = FAULT_COLORS.get(kind, "#000")
        out.append(
            f"<rect x='{x(a):.1f}' y='20' width='{max(1.5, x(b) - x(a)):.1f}' "
            f"height='{height - 36}' fill='{color}' opacity='0.10'>"
            f"<title>{_e(label)}</title></rect>"
        )
        out.append(f"<text x='{x(a) + 2:.1f}' y='{height - 4}' fill='{color}'>{_e(label)}</text>")
    y = 24
    for o, subjects, quiet in bands:
        label = f"node {o}" + (f" (+{quiet} always alive)" if quiet else "")
        out.append(f"<text x='4' y='{y + 11}' font-weight='600'>{_e(label)}</text>")
        y += 14
        for a, b in _down_spans(trace, o):
            if b > t_start and a < t_end:
                h = ROW * max(1, len(subjects))
                out.append(
                    f"<rect x='{x(a):.1f}' y='{y}' width='{max(1, x(b) - x(a)):.1f}' "
                    f"height='{h}' fill='#000' opacity='0.25'><title>node {o} not "
                    "running</title></rect>"
                )
        if not subjects:
            out.append(
                f"<rect x='{LEFT}' y='{y + 2}' width='{plot_w}' height='{ROW - 3}' "
                f"fill='{COLORS['alive']}' opacity='0.35'/>"
            )
            y += ROW
        for s in subjects:
            out.append(
                f"<text x='{LEFT - 4}' y='{y + ROW - 1}' text-anchor='end' font-size='8'>{s}</text>"
            )
            segs = _segments(views, o, s, t_start, t_end)
            for a, b, st in segs:
                out.append(
                    f"<rect x='{x(a):.1f}' y='{y + 1}' width='{max(0.5, x(b) - x(a)):.1f}'"
                    f" height='{ROW - 2}' fill='{COLORS.get(st, '#e0e0e0')}'>"
                    f"<title>node {o} sees {s}: {_e(st or 'unknown')} from "
                    f"{a - trace.t0:+.2f}s</title></rect>"
                )
            dead = next((a for a, _, st in segs if st in ("dead", "left") and a > t_start), None)
            if dead is not None:
                out.append(
                    f"<text x='{x(dead):.1f}' y='{y + ROW - 1}' font-size='8' "
                    "text-anchor='middle'>▼</text>"
                )
            y += ROW
        y += 6
    out.append("</svg>")
    if len(trace.all_nodes()) > MAX_BANDS:
        out.append(
            f"<p class='muted'>showing the first {MAX_BANDS} observers of "
            f"{len(trace.all_nodes())}</p>"
        )
    return "\n".join(out)


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
