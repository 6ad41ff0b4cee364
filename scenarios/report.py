"""``report.html``: one self-contained page (inline CSS and SVG, no external references).

Rules:
1. One function per section of the page, in page order; a section with nothing to show is
   left out (the expectations and both false-positive counts are always there).
2. Everything shown comes from ``results.json``'s content plus the trace (the timeline, drawn
   by ``timeline``); text is escaped.
"""

from __future__ import annotations

import html
from typing import Any

from .timeline import legend, timeline
from .trace import Trace

__all__ = ["render_report"]

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
    parts = [*_header(results), *_expectations(results)]
    if trace is not None:
        parts += ["<h2>Timeline</h2>", legend(), timeline(trace)]
    parts += [
        *_detection(results),
        *_convergence(results),
        *_false_positives(results),
        *_http(results),
        *_actions(results),
        "</body></html>\n",
    ]
    return "\n".join(parts)


# ---- sections of the page: each a list of HTML fragments, empty when there is nothing to show


def _header(results: dict[str, Any]) -> list[str]:
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
    return parts


def _expectations(results: dict[str, Any]) -> list[str]:
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
    return [
        "<h2>Expectations</h2>",
        _table(["", "expectation", "measured", "bound", "detail"], rows),
    ]


def _detection(results: dict[str, Any]) -> list[str]:
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
    if not rows:
        return []
    header = ["step", "subject", "at", "first suspect", "first dead", "full dead", "completeness"]
    return ["<h2>Detection (seconds after the fault)</h2>", _table(header, rows)]


def _convergence(results: dict[str, Any]) -> list[str]:
    conv = results.get("convergence", [])
    if not conv:
        return []
    rows = [[_e(c["step"]), _fmt(c.get("at")), _fmt(c["seconds"])] for c in conv]
    return ["<h2>Convergence</h2>", _table(["after", "at", "seconds"], rows)]


def _false_positives(results: dict[str, Any]) -> list[str]:
    parts = []
    for key, title in (("false_suspicions", "False suspicions"), ("false_deaths", "False deaths")):
        fp = results.get(key, {})
        items = fp.get("events", [])[:20]
        parts.append(f"<h2>{title}: {_e(fp.get('count', 0))}</h2>")
        if items:
            rows = [
                [_e(i["observer"]), _e(i["subject"]), _fmt(i["t"]), _fmt(i["since"])] for i in items
            ]
            parts.append(_table(["observer", "subject", "t", "episode since"], rows))
    return parts


def _http(results: dict[str, Any]) -> list[str]:
    rows = [
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
    if not rows:
        return []
    header = ["step", "node", "request", "sent at", "status", "seconds", "error"]
    return ["<h2>HTTP requests</h2>", _table(header, rows)]


def _actions(results: dict[str, Any]) -> list[str]:
    steps = results.get("steps", [])
    if not steps:
        return []
    rows = [[_fmt(s["t"]), _e(s["kind"]), _e(s["step"]), _e(s["nodes"])] for s in steps]
    return ["<h2>Actions</h2>", _table(["t", "kind", "step", "nodes"], rows)]
