"""``report.html`` for one run, and the page kit it shares with ``runs_page`` (the page for K
runs): the style sheet, escaping, tables, the page's top and the bounds of expectations.

Rules:
1. One function per section of the page, in page order; a section with nothing to show is
   left out (the expectations and the suspicion counts are always there).
2. Everything shown comes from ``results.json``'s content plus one trace (the timeline, drawn
   by ``timeline``; charts by ``charts``). Keys the schema calls optional may be missing.
   Text is escaped (``esc``); a page links nowhere but to runs' own pages (see ``runs_page``).
3. Every figure carries its unit: in the column header ("first suspect (s)") or the cell
   ("12.40 s", "3 events"). A figure that never happened reads "never".
4. The kit (``esc``, ``table``, ``text_cols``, ``section``, ``page_top``, ``bound_html``,
   ``derived_bounds``, ``LATENCIES``) lives here once; ``runs_page`` imports it, never copies.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Sequence
from typing import Any

from ..judge.trace import Trace
from .charts import DASH, action_label, figure, percent
from .summary import collection_notes
from .timeline import legend, timeline

__all__ = [
    "LATENCIES",
    "Column",
    "action_text",
    "bound_html",
    "derived_bounds",
    "esc",
    "page_top",
    "render_report",
    "section",
    "table",
    "text_cols",
]

CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;max-width:1200px}
h1{font-size:20px;margin:0 0 4px} h2{font-size:16px;margin:24px 0 8px}
h3{font-size:14px;margin:14px 0 4px}
table{border-collapse:collapse;margin:4px 0} td,th{border:1px solid #ddd;padding:3px 8px;
text-align:left;font-size:13px;white-space:nowrap} th{background:#f5f5f5} td.w{white-space:normal}
.pass{color:#2e7d32;font-weight:600} .fail{color:#c62828;font-weight:600}
.error{color:#c62828;font-weight:600} .not_applicable{color:#757575}
.verdict{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff}
.v-pass{background:#2e7d32} .v-fail{background:#c62828} .v-error{background:#6d4c41}
.legend span{display:inline-block;margin-right:12px} .sw{display:inline-block;width:12px;
height:12px;vertical-align:middle;margin-right:4px;border:1px solid #999}
svg text{font:11px system-ui,sans-serif} .muted{color:#757575} abbr{text-decoration:none}
.charts{display:flex;flex-wrap:wrap;gap:8px 24px}
"""
WRAP = frozenset({"expectation", "detail", "what failed", "error", "figure", "action"})
SHOWN = 20  # events listed per table of suspicions (all are counted)
LATENCIES = (
    ("first_suspect", "first suspect", "#ff9800"),
    ("first_dead", "first dead", "#e53935"),
    ("full_dead", "full dead", "#6a1b9a"),
)


def esc(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _short(x: Any) -> str:
    """A bound or a term: at most two decimals, no trailing zeros ("25", "12.43")."""
    return f"{round(x, 2):g}" if isinstance(x, int | float) else str(x)


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table; figures keep to one line, the columns of prose (``WRAP``) may wrap."""
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    tds = ["<td class='w'>" if h in WRAP else "<td>" for h in header]
    body = "".join(
        "<tr>" + "".join(f"{td}{c}</td>" for td, c in zip(tds, r, strict=True)) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


Column = tuple[str, Callable[[dict[str, Any]], str]]  # a header, and a row's cell


def text_cols(*pairs: tuple[str, str]) -> list[Column]:
    """Columns showing a key's text as it is: (header, key) each."""
    return [(h, _txt(k)) for h, k in pairs]


def _txt(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda d: esc(d.get(key))


def _fig(key: str, none: str = "\u2014") -> Callable[[dict[str, Any]], str]:
    """A cell showing a key's figure (seconds: the unit is in the header)."""
    return lambda d: figure(d.get(key), none=none)


def section(title: str, items: Any, cols: Sequence[Column], level: str = "h2") -> list[str]:
    """A heading and a table of ``items`` (dicts) in ``cols``; nothing when there are none."""
    if not items:
        return []
    rows = [[cell(i) for _, cell in cols] for i in items]
    return [f"<{level}>{esc(title)}</{level}>", table([h for h, _ in cols], rows)]


def _page(title: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{esc(title)}</title>"
        f"<style>{CSS}</style></head><body>"
    )


def action_text(step: dict[str, Any], cluster: int | None = None) -> str:
    """A step of results' "steps" as text: "partition 0, 1 | 2-4", "loss 10.6 % on all".

    ``cluster`` (the number of nodes) lets a step on every node say "all"; loss is in
    percent, delay in milliseconds, a clock's offset in seconds, as in the scenario file.
    """
    value = step.get("value")
    return action_label(
        str(step.get("kind", "")),
        [int(i) for i in step.get("nodes") or ()],
        [[int(i) for i in g] for g in step.get("groups") or ()],
        float(value) if isinstance(value, int | float) else 0.0,
        cluster,
        rate=_float(step.get("rate"), 1.0),
        pool=str(step.get("pool") or ""),
        errors=_float(step.get("errors"), 0.0),
        full=step.get("full") is True,
    )


def _float(v: Any, default: float) -> float:
    return float(v) if isinstance(v, int | float) and not isinstance(v, bool) else default


# ---- one run -------------------------------------------------------------------------------


def render_report(results: dict[str, Any], trace: Trace | None) -> str:
    """The page for one run; ``trace`` None (an error before the start) omits the timeline."""
    parts = [
        *_header(results),
        *_expectations(results),
        *derived_bounds(results.get("expectations")),
    ]
    if trace is not None:
        parts += ["<h2>Timeline (seconds after the start)</h2>", legend(), timeline(trace)]
    parts += [
        *_detection(results),
        *_convergence(results),
        *_suspicions(results),
        *_http(results),
        *_agents(results),
        *_actions(results),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _header(results: dict[str, Any]) -> list[str]:
    seed, duration = esc(results.get("seed")), figure(results.get("duration"), "s")
    parts = page_top(results, "", f"seed <b>{seed}</b> · duration <b>{duration}</b>")
    if results.get("error"):
        parts.append(f"<p class='error'>error: {esc(results['error'])}</p>")
    if results.get("hostfile"):
        parts.append(f"<p>on the running cluster of <code>{esc(results['hostfile'])}</code></p>")
    for problem, text in collection_notes(results.get("collection")):
        parts.append(f"<p class='{'error' if problem else 'muted'}'>{esc(text)}</p>")
    return parts


def page_top(results: dict[str, Any], title: str, facts: str) -> list[str]:
    """The page's head, the title with the verdict, the description, the facts of the run."""
    verdict = str(results.get("verdict", "error"))
    verdict = verdict if verdict in ("pass", "fail", "error") else "error"
    name = results.get("scenario")
    return [
        _page(f"{name}: {verdict}{title}"),
        f"<h1>{esc(name)} <span class='verdict v-{verdict}'>{verdict.upper()}</span></h1>",
        f"<div class='muted'>{esc(results.get('description'))}</div>",
        f"<p>mode <b>{esc(results.get('mode'))}</b> · nodes <b>{esc(results.get('nodes'))}</b> · "
        f"{_serf_fact(results)}{facts} · source {esc(results.get('source'))}</p>",
    ]


def _serf_fact(results: dict[str, Any]) -> str:
    """ "Serf agents 2 · " where the run had agents beside its nodes."""
    agents = results.get("agents")
    return f"Serf agents <b>{len(agents)}</b> · " if isinstance(agents, list) and agents else ""


def bound_html(x: dict[str, Any]) -> str:
    """The bound of an expectation with its unit; derived ones say so, the terms in a tooltip."""
    b, unit = x.get("bound"), x.get("unit") or "s"
    if b is None:
        return "—"
    if isinstance(b, str):  # a property's bound, in words
        return esc(b)
    if isinstance(b, list | tuple) and len(b) == 2:
        text = esc(f"{_short(b[0])}{DASH}{_short(b[1])} s")
    else:
        text = esc(f"{_short(b)} {unit}")
    if x.get("bound_source") != "derived":
        return text
    detail = x.get("bound_detail") or {}
    conf = detail.get("confidence")
    how = f"derived, {conf * 100:g} %" if isinstance(conf, int | float) else "derived"
    terms = detail.get("terms") or {}
    tip = "; ".join(
        [str(detail.get("formula") or ""), *(f"{k} {_short(v)} s" for k, v in terms.items())]
    )
    return f"<abbr title='{esc(tip.strip('; '))}'>{text} ({how})</abbr>"


# The bound each built-in property holds a run to (``judge.properties``), for its row.
PROPERTY_BOUNDS = {
    "completeness": "a killed node dead everywhere within the derived death bound (1 - 10^-6)",
    "convergence": "every node up holds every node up alive within the derived bound",
    "quiet_accuracy": "no new suspicion once the convergence bound has passed",
    "no_exception": "no machine raises",
    "incarnation": "an observer's incarnation of a subject never goes down",
}


def _property_row(results: dict[str, Any]) -> list[dict[str, Any]]:
    """The file's ``property`` (an explore failure or its replay) as an expectation."""
    p = results.get("property")
    if not isinstance(p, dict) or not p.get("name"):
        return []
    name = str(p["name"])
    return [
        {
            "status": p.get("status"),
            "description": f"property {name}",
            "bound": PROPERTY_BOUNDS.get(name, "the user's checker"),
            "detail": p.get("detail"),
        }
    ]


def _expectations(results: dict[str, Any]) -> list[str]:
    rows = []
    for x in [*results.get("expectations", []), *_property_row(results)]:
        status = str(x.get("status", ""))
        rows.append(
            [
                f"<span class='{esc(status)}'>{esc(status)}</span>",
                esc(x.get("description")),
                figure(x.get("measured"), x.get("unit") or "s"),
                bound_html(x),
                esc(x.get("detail")),
            ]
        )
    return [
        "<h2>Expectations</h2>",
        table(["", "expectation", "measured", "bound", "detail"], rows),
    ]


def derived_bounds(expectations: list[dict[str, Any]] | None) -> list[str]:
    """The terms of every bound derived from the protocol, one small table each."""
    out = []
    for x in expectations or []:
        detail = x.get("bound_detail")
        if x.get("bound_source") != "derived" or not isinstance(detail, dict):
            continue
        rows = [[esc(k), figure(v, "s")] for k, v in (detail.get("terms") or {}).items()]
        out.append(
            f"<h3>Bound of “{esc(x.get('description'))}”: {bound_html(x)}</h3>"
            f"<div class='muted'>{esc(detail.get('formula'))}</div>"
            + table(["term", "value"], rows)
        )
    return ["<h2>Derived bounds</h2>", *out] if out else []


def _detection(results: dict[str, Any]) -> list[str]:
    cols = [
        *text_cols(("step", "step"), ("subject", "subject")),
        ("at (s)", _fig("at")),
        *text_cols(("observers", "observers")),
        *((f"{label} (s)", _fig(key, "never")) for key, label, _ in LATENCIES),
        ("completeness", lambda d: percent(d.get("completeness"))),
    ]
    return section("Detection (seconds after the fault)", results.get("detection"), cols)


def _convergence(results: dict[str, Any]) -> list[str]:
    cols = [
        *text_cols(("after", "step")),
        ("at (s)", _fig("at")),
        ("every live node sees every live node alive after (s)", _fig("seconds", "never")),
    ]
    return section("Convergence", results.get("convergence"), cols)


def _count(results: dict[str, Any], key: str) -> str:
    v = (results.get(key) or {}).get("count")
    return "—" if v is None else figure(v, "events")


def _suspicions(results: dict[str, Any]) -> list[str]:
    """False accusations (of a reachable, healthy node) apart from expected ones, with reasons."""
    keys = ("false_suspicions", "false_deaths", "expected_suspicions", "expected_deaths")
    counts = " · ".join(f"{k.replace('_', ' ')} <b>{_count(results, k)}</b>" for k in keys)
    parts = ["<h2>Suspicions and deaths</h2>", f"<p>{counts}</p>"]
    false_rows = [
        *((e, "suspected") for e in (results.get("false_suspicions") or {}).get("events", [])),
        *((e, "dead") for e in (results.get("false_deaths") or {}).get("events", [])),
    ]
    events = (results.get("suspicions") or {}).get("events", [])
    expected = [(e, str(e.get("state", ""))) for e in events if e.get("class") == "expected"]
    totals = [
        sum(int((results.get(k) or {}).get("count") or 0) for k in pair)
        for pair in (keys[:2], keys[2:])
    ]
    parts += _accusations("False", false_rows, totals[0], reason=False)
    parts += _accusations("Expected", expected, totals[1], reason=True)
    return parts


def _accusations(
    title: str, rows: list[tuple[dict[str, Any], str]], total: int, *, reason: bool
) -> list[str]:
    """The first ``SHOWN`` accusations of one class: who, whom, when, why."""
    cols = [
        *text_cols(("observer", "observer"), ("subject", "subject"), ("state", "state")),
        ("at (s)", _fig("t")),
        ("episode since (s)", _fig("since")),
        *text_cols(("cause", "cause"), *([("reason", "reason")] if reason else [])),
    ]
    items = [{"state": st, **e} for e, st in rows[:SHOWN]]
    total = max(total, len(rows))
    more = f" ({len(items)} of {total} listed)" if total > len(items) else ""
    return section(f"{title}{more}", items, cols, "h3")


def _http(results: dict[str, Any]) -> list[str]:
    cols = [
        *text_cols(("step", "step"), ("node", "node")),
        ("request", lambda h: esc(f"{h.get('method')} {h.get('path')}")),
        ("sent at (s)", _fig("at")),
        *text_cols(("status", "status")),
        ("took (s)", _fig("elapsed")),
        *text_cols(("error", "error")),
    ]
    return section("HTTP requests", results.get("http"), cols)


def _agents(results: dict[str, Any]) -> list[str]:
    """Every Serf agent's view at the end, as ``serf members`` said it, and how often it changed."""
    cols = [
        *text_cols(("member", "member"), ("agent", "name")),
        ("view at the end", lambda a: esc(_view_text(a.get("view")))),
        ("changes", lambda a: figure(len(a.get("changes") or ()), "events")),
    ]
    return section("Serf agents (views read with serf members)", results.get("agents"), cols)


def _view_text(view: Any) -> str:
    """``0 alive, 2 dead``: a view of results' ``agents``."""
    if not isinstance(view, dict):
        return ""
    return ", ".join(f"{s} {state}" for s, state in view.items())


def _actions(results: dict[str, Any]) -> list[str]:
    n = results.get("nodes") if isinstance(results.get("nodes"), int) else None
    cols = [
        ("at (s)", _fig("t")),
        *text_cols(("step", "step")),
        ("action", lambda s: esc(action_text(s, n))),
    ]
    return section("Actions", results.get("steps"), cols)
