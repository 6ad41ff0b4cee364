"""``report.html``: one self-contained page per run, or per K runs (inline CSS and SVG only).

Rules:
1. One function per section of the page, in page order; a section with nothing to show is
   left out (the expectations and the suspicion counts are always there).
2. Everything shown comes from ``results.json``'s content plus one trace (the timeline, drawn
   by ``timeline``; charts by ``charts``). Keys the schema calls optional may be missing.
   Text is escaped; the only links are to the runs' own pages (``run-NNN/report.html``).
3. Every figure carries its unit: in the column header ("first suspect (s)") or the cell
   ("12.40 s", "3 events"). A figure that never happened reads "never".
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence
from typing import Any

from .charts import DASH, Cell, Series, action_label, cdf_chart, figure, percent, strip
from .timeline import legend, timeline
from .trace import Trace

__all__ = ["action_text", "render_report", "render_runs"]

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
PERCENTILES = ("p50", "p90", "p99", "max")
LATENCIES = (
    ("first_suspect", "first suspect", "#ff9800"),
    ("first_dead", "first dead", "#e53935"),
    ("full_dead", "full dead", "#6a1b9a"),
)
SAFE_DIR = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a run's directory, as a relative link


def _e(x: Any) -> str:
    return html.escape("" if x is None else str(x), quote=True)


def _short(x: Any) -> str:
    """A bound or a term: at most two decimals, no trailing zeros ("25", "12.43")."""
    return f"{round(x, 2):g}" if isinstance(x, int | float) else str(x)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A table; figures keep to one line, the columns of prose (``WRAP``) may wrap."""
    head = "".join(f"<th>{_e(h)}</th>" for h in header)
    tds = ["<td class='w'>" if h in WRAP else "<td>" for h in header]
    body = "".join(
        "<tr>" + "".join(f"{td}{c}</td>" for td, c in zip(tds, r, strict=True)) + "</tr>"
        for r in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


Column = tuple[str, Callable[[dict[str, Any]], str]]  # a header, and a row's cell


def _cols(*pairs: tuple[str, str]) -> list[Column]:
    """Columns showing a key's text as it is: (header, key) each."""
    return [(h, _txt(k)) for h, k in pairs]


def _txt(key: str) -> Callable[[dict[str, Any]], str]:
    return lambda d: _e(d.get(key))


def _fig(key: str, none: str = "\u2014") -> Callable[[dict[str, Any]], str]:
    """A cell showing a key's figure (seconds: the unit is in the header)."""
    return lambda d: figure(d.get(key), none=none)


def _section(title: str, items: Any, cols: Sequence[Column], level: str = "h2") -> list[str]:
    """A heading and a table of ``items`` (dicts) in ``cols``; nothing when there are none."""
    if not items:
        return []
    rows = [[cell(i) for _, cell in cols] for i in items]
    return [f"<{level}>{_e(title)}</{level}>", _table([h for h, _ in cols], rows)]


def _page(title: str) -> str:
    return (
        f"<!doctype html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
        f"<style>{CSS}</style></head><body>"
    )


def action_text(step: dict[str, Any], cluster: int | None = None) -> str:
    """A step of results' "steps" as text: "partition 0, 1 | 2-4", "loss 10.6 % on all".

    ``cluster`` (the number of nodes) lets a step on every node say "all"; loss is in
    percent, delay in milliseconds, as in the scenario file.
    """
    value = step.get("value")
    return action_label(
        str(step.get("kind", "")),
        [int(i) for i in step.get("nodes") or ()],
        [[int(i) for i in g] for g in step.get("groups") or ()],
        float(value) if isinstance(value, int | float) else 0.0,
        cluster,
    )


# ---- one run -------------------------------------------------------------------------------


def render_report(results: dict[str, Any], trace: Trace | None) -> str:
    """The page for one run; ``trace`` None (an error before the start) omits the timeline."""
    parts = [*_header(results), *_expectations(results), *_derived(results.get("expectations"))]
    if trace is not None:
        parts += ["<h2>Timeline (seconds after the start)</h2>", legend(), timeline(trace)]
    parts += [
        *_detection(results),
        *_convergence(results),
        *_suspicions(results),
        *_http(results),
        *_actions(results),
        "</body></html>\n",
    ]
    return "\n".join(parts)


def _header(results: dict[str, Any]) -> list[str]:
    seed, duration = _e(results.get("seed")), figure(results.get("duration"), "s")
    parts = _top(results, "", f"seed <b>{seed}</b> · duration <b>{duration}</b>")
    if results.get("error"):
        parts.append(f"<p class='error'>error: {_e(results['error'])}</p>")
    return parts


def _top(results: dict[str, Any], title: str, facts: str) -> list[str]:
    """The page's head, the title with the verdict, the description, the facts of the run."""
    verdict = str(results.get("verdict", "error"))
    verdict = verdict if verdict in ("pass", "fail", "error") else "error"
    name = results.get("scenario")
    return [
        _page(f"{name}: {verdict}{title}"),
        f"<h1>{_e(name)} <span class='verdict v-{verdict}'>{verdict.upper()}</span></h1>",
        f"<div class='muted'>{_e(results.get('description'))}</div>",
        f"<p>mode <b>{_e(results.get('mode'))}</b> · nodes <b>{_e(results.get('nodes'))}</b> · "
        f"{facts} · source {_e(results.get('source'))}</p>",
    ]


def _bound(x: dict[str, Any]) -> str:
    """The bound of an expectation with its unit; derived ones say so, the terms in a tooltip."""
    b, unit = x.get("bound"), x.get("unit") or "s"
    if b is None:
        return "—"
    if isinstance(b, list | tuple) and len(b) == 2:
        text = _e(f"{_short(b[0])}{DASH}{_short(b[1])} s")
    else:
        text = _e(f"{_short(b)} {unit}")
    if x.get("bound_source") != "derived":
        return text
    detail = x.get("bound_detail") or {}
    conf = detail.get("confidence")
    how = f"derived, {conf * 100:g} %" if isinstance(conf, int | float) else "derived"
    terms = detail.get("terms") or {}
    tip = "; ".join(
        [str(detail.get("formula") or ""), *(f"{k} {_short(v)} s" for k, v in terms.items())]
    )
    return f"<abbr title='{_e(tip.strip('; '))}'>{text} ({how})</abbr>"


def _expectations(results: dict[str, Any]) -> list[str]:
    rows = []
    for x in results.get("expectations", []):
        status = str(x.get("status", ""))
        rows.append(
            [
                f"<span class='{_e(status)}'>{_e(status)}</span>",
                _e(x.get("description")),
                figure(x.get("measured"), x.get("unit") or "s"),
                _bound(x),
                _e(x.get("detail")),
            ]
        )
    return [
        "<h2>Expectations</h2>",
        _table(["", "expectation", "measured", "bound", "detail"], rows),
    ]


def _derived(expectations: list[dict[str, Any]] | None) -> list[str]:
    """The terms of every bound derived from the protocol, one small table each."""
    out = []
    for x in expectations or []:
        detail = x.get("bound_detail")
        if x.get("bound_source") != "derived" or not isinstance(detail, dict):
            continue
        rows = [[_e(k), figure(v, "s")] for k, v in (detail.get("terms") or {}).items()]
        out.append(
            f"<h3>Bound of “{_e(x.get('description'))}”: {_bound(x)}</h3>"
            f"<div class='muted'>{_e(detail.get('formula'))}</div>"
            + _table(["term", "value"], rows)
        )
    return ["<h2>Derived bounds</h2>", *out] if out else []


def _detection(results: dict[str, Any]) -> list[str]:
    cols = [
        *_cols(("step", "step"), ("subject", "subject")),
        ("at (s)", _fig("at")),
        *_cols(("observers", "observers")),
        *((f"{label} (s)", _fig(key, "never")) for key, label, _ in LATENCIES),
        ("completeness", lambda d: percent(d.get("completeness"))),
    ]
    return _section("Detection (seconds after the fault)", results.get("detection"), cols)


def _convergence(results: dict[str, Any]) -> list[str]:
    cols = [
        *_cols(("after", "step")),
        ("at (s)", _fig("at")),
        ("every live node sees every live node alive after (s)", _fig("seconds", "never")),
    ]
    return _section("Convergence", results.get("convergence"), cols)


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
        *_cols(("observer", "observer"), ("subject", "subject"), ("state", "state")),
        ("at (s)", _fig("t")),
        ("episode since (s)", _fig("since")),
        *_cols(("cause", "cause"), *([("reason", "reason")] if reason else [])),
    ]
    items = [{"state": st, **e} for e, st in rows[:SHOWN]]
    total = max(total, len(rows))
    more = f" ({len(items)} of {total} listed)" if total > len(items) else ""
    return _section(f"{title}{more}", items, cols, "h3")


def _http(results: dict[str, Any]) -> list[str]:
    cols = [
        *_cols(("step", "step"), ("node", "node")),
        ("request", lambda h: _e(f"{h.get('method')} {h.get('path')}")),
        ("sent at (s)", _fig("at")),
        *_cols(("status", "status")),
        ("took (s)", _fig("elapsed")),
        *_cols(("error", "error")),
    ]
    return _section("HTTP requests", results.get("http"), cols)


def _actions(results: dict[str, Any]) -> list[str]:
    n = results.get("nodes") if isinstance(results.get("nodes"), int) else None
    cols = [
        ("at (s)", _fig("t")),
        *_cols(("step", "step")),
        ("action", lambda s: _e(action_text(s, n))),
    ]
    return _section("Actions", results.get("steps"), cols)


# ---- many runs -----------------------------------------------------------------------------


def render_runs(results: dict[str, Any], trace: Trace | None, trace_seed: int | None) -> str:
    """The page for K runs: pass rates, the per-run strip, distributions, one run's timeline.

    ``trace`` is the trace of the run of seed ``trace_seed`` (None: no timeline).
    """
    agg = results.get("aggregate") or {}
    parts = [
        *_runs_header(results, agg),
        *_strip(results),
        *_runs_expectations(results, agg),
        *_derived(agg.get("expectations")),
        *_distributions(agg),
        *_failed_runs(results),
    ]
    if trace is not None:
        parts += [
            f"<h2>Timeline of seed {_e(trace_seed)} (seconds after the start)</h2>",
            legend(),
            timeline(trace),
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _runs_header(results: dict[str, Any], agg: dict[str, Any]) -> list[str]:
    seeds = results.get("seeds") or []
    span = f"{seeds[0]}{DASH}{seeds[-1]}" if len(seeds) == 2 else "\u2014"
    k = _e(agg.get("runs", results.get("runs_requested")))
    errors = f" · errors <b>{_e(agg['errors'])}</b>" if agg.get("errors") else ""
    facts = (
        f"<b>{k}</b> runs · seeds <b>{_e(span)}</b> · passed <b>{_e(agg.get('passed'))}/{k}</b> "
        f"({percent(agg.get('pass_rate'))}) · required "
        f"<b>{percent(results.get('pass_rate_required', 1.0))}</b>{errors}"
    )
    return _top(results, f" ({k} runs)", facts)


def _strip(results: dict[str, Any]) -> list[str]:
    """One cell per run in seed order; in real mode each links to the run's own page."""
    runs = results.get("runs") or []
    if not runs:
        return []
    real = results.get("mode") == "real"
    cells = []
    for r in runs:
        verdict = str(r.get("verdict", "error"))
        title = f"seed {r.get('seed')}: {verdict}"
        if r.get("failed"):
            title += " (" + "; ".join(map(str, r["failed"])) + ")"
        if r.get("error"):
            title += f": {r['error']}"
        out = r.get("out")
        ok = real and isinstance(out, str) and SAFE_DIR.fullmatch(out) and out not in (".", "..")
        cells.append(Cell(verdict, title, f"{out}/report.html" if ok else None))
    note = " (click a run for its report)" if real else ""
    return [f"<h2>Runs{note}</h2>", strip(cells)]


def _runs_expectations(results: dict[str, Any], agg: dict[str, Any]) -> list[str]:
    need = results.get("pass_rate_required")
    need = float(need) if isinstance(need, int | float) else 1.0
    rows = []
    for x in agg.get("expectations", []):
        m = x.get("measured") or {}
        unit = m.get("unit") or x.get("unit") or "s"
        rate = x.get("pass_rate")
        cls = "pass" if isinstance(rate, int | float) and rate >= need - 1e-12 else "fail"
        passed = f"{_e(x.get('passed'))}/{_e(x.get('applicable'))} ({percent(rate)})"
        rows.append(
            [
                f"<span class='{cls}'>{passed}</span>",
                _e(x.get("description")),
                _bound(x),
                *(figure(m.get(p), unit, "never") for p in PERCENTILES),
                _e(m.get("missing", "—")),
            ]
        )
    header = ["passed", "expectation", "bound", "p50", "p90", "p99", "max", "never (runs)"]
    return ["<h2>Expectations over the runs</h2>", _table(header, rows)]


def _step_of(x: dict[str, Any]) -> str | None:
    """The step an expectation counts from: its "after", else the end of its description."""
    found = re.search(r" after (\S+)$", str(x.get("description", "")))
    return str(x.get("after") or (found.group(1) if found else "")) or None


def _bound_for(agg: dict[str, Any], step: str, kinds: tuple[str, ...]) -> float | None:
    for x in agg.get("expectations", []):
        b = x.get("bound")
        if x.get("kind") in kinds and _step_of(x) == step and isinstance(b, int | float):
            return float(b)
    return None


def _values(p: Any) -> tuple[float | None, ...] | None:
    vals = p.get("values") if isinstance(p, dict) else None
    if not isinstance(vals, list) or not vals:
        return None
    return tuple(float(v) if isinstance(v, int | float) else None for v in vals)


def _prow(name: str, p: Any, unit: str) -> list[str]:
    p = p if isinstance(p, dict) else {}
    never = p.get("missing")
    return [
        _e(name),
        _e(p.get("n", "—")),
        *(figure(p.get(k), unit, "never") for k in PERCENTILES),
        _e("—" if never is None else never),
    ]


def _distributions(agg: dict[str, Any]) -> list[str]:
    """Per fault the CDF of its detection latencies, per recovery that of convergence."""
    out, rows = [], []
    for d in agg.get("detection", []):
        step = str(d.get("step"))
        what = f"{step}: {d.get('kind')} of node {d.get('subject')}"
        series = [
            Series(label, vals, color)
            for key, label, color in LATENCIES
            if (vals := _values(d.get(key))) is not None
        ]
        bound = _bound_for(agg, step, ("dead", "leader_change"))
        rows += [_prow(f"{what}: {label}", d.get(key), "s") for key, label, _ in LATENCIES]
        if series:
            chart = cdf_chart(series, bound)
            out.append(f"<div><h3>{_e(what)} (seconds after the fault)</h3>{chart}</div>")
    for c in agg.get("convergence", []):
        step = str(c.get("step"))
        vals = _values(c.get("seconds"))
        rows.append(_prow(f"converged after {step}", c.get("seconds"), "s"))
        if vals is not None:
            chart = cdf_chart(
                [Series("converged", vals, "#1565c0")],
                _bound_for(agg, step, ("converged", "alive")),
            )
            out.append(f"<div><h3>Convergence after {_e(step)} (seconds)</h3>{chart}</div>")
    counts = ("false_suspicions", "false_deaths", "expected_suspicions", "expected_deaths")
    rows += [_prow(f"{k.replace('_', ' ')} per run", agg[k], "events") for k in counts if k in agg]
    if not rows:
        return []
    header = ["figure", "runs", "p50", "p90", "p99", "max", "never (runs)"]
    return [
        "<h2>Distributions over the runs</h2>",
        _table(header, rows),
        f"<div class='charts'>{''.join(out)}</div>" if out else "",
    ]


def _failed_runs(results: dict[str, Any]) -> list[str]:
    bad = [r for r in results.get("runs") or [] if r.get("verdict") != "pass"]
    cols = [
        *_cols(("seed", "seed")),
        (
            "verdict",
            lambda r: f"<span class='{_e(r.get('verdict'))}'>{_e(r.get('verdict'))}</span>",
        ),
        ("duration", lambda r: figure(r.get("duration"), "s")),
        ("what failed", lambda r: _e("; ".join(map(str, r.get("failed") or [])) or r.get("error"))),
    ]
    more = f" (the first 50 of {len(bad)})" if len(bad) > 50 else ""
    return _section(f"Runs that did not pass{more}", bad[:50], cols)
