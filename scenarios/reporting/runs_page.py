"""The ``report.html`` of K runs of one scenario: pass rates, a strip of the runs, the
distributions of their figures, the runs that did not pass and one run's timeline.

Rules:
1. One function per section of the page, in page order; a section with nothing to show is
   left out (the expectations over the runs are always there).
2. Everything shown comes from the aggregated ``results.json`` (its "aggregate", "runs" and
   "seeds") plus the trace of one run. Keys the schema calls optional may be missing.
3. The page kit (escaping, tables, the page's top, bounds) is ``report``'s: imported, never
   copied, so both pages look and escape alike.
4. The only links are to the runs' own pages (``run-NNN/report.html``), in real mode, and only
   to a directory name ``SAFE_DIR`` accepts.
5. Every figure carries its unit; percentiles are p50, p90, p99 and max, and a run where a
   figure never happened counts under "never (runs)".
"""

from __future__ import annotations

import re
from typing import Any

from ..judge.trace import Trace
from .charts import DASH, Cell, Series, cdf_chart, figure, percent, strip
from .report import (
    LATENCIES,
    bound_html,
    derived_bounds,
    esc,
    page_top,
    section,
    table,
    text_cols,
)
from .timeline import legend, timeline

__all__ = ["render_runs"]

PERCENTILES = ("p50", "p90", "p99", "max")
SAFE_DIR = re.compile(r"[A-Za-z0-9_.-]{1,64}")  # a run's directory, as a relative link


def render_runs(results: dict[str, Any], trace: Trace | None, trace_seed: int | None) -> str:
    """The page for K runs: pass rates, the per-run strip, distributions, one run's timeline.

    ``trace`` is the trace of the run of seed ``trace_seed`` (None: no timeline).
    """
    agg = results.get("aggregate") or {}
    parts = [
        *_runs_header(results, agg),
        *_strip(results),
        *_runs_expectations(results, agg),
        *derived_bounds(agg.get("expectations")),
        *_distributions(agg),
        *_failed_runs(results),
    ]
    if trace is not None:
        parts += [
            f"<h2>Timeline of seed {esc(trace_seed)} (seconds after the start)</h2>",
            legend(),
            timeline(trace),
        ]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _runs_header(results: dict[str, Any], agg: dict[str, Any]) -> list[str]:
    seeds = results.get("seeds") or []
    span = f"{seeds[0]}{DASH}{seeds[-1]}" if len(seeds) == 2 else "\u2014"
    k = esc(agg.get("runs", results.get("runs_requested")))
    errors = f" · errors <b>{esc(agg['errors'])}</b>" if agg.get("errors") else ""
    facts = (
        f"<b>{k}</b> runs · seeds <b>{esc(span)}</b> · passed <b>{esc(agg.get('passed'))}/{k}</b> "
        f"({percent(agg.get('pass_rate'))}) · required "
        f"<b>{percent(results.get('pass_rate_required', 1.0))}</b>{errors}"
    )
    return page_top(results, f" ({k} runs)", facts)


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
        passed = f"{esc(x.get('passed'))}/{esc(x.get('applicable'))} ({percent(rate)})"
        rows.append(
            [
                f"<span class='{cls}'>{passed}</span>",
                esc(x.get("description")),
                bound_html(x),
                *(figure(m.get(p), unit, "never") for p in PERCENTILES),
                esc(m.get("missing", "—")),
            ]
        )
    header = ["passed", "expectation", "bound", "p50", "p90", "p99", "max", "never (runs)"]
    return ["<h2>Expectations over the runs</h2>", table(header, rows)]


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
        esc(name),
        esc(p.get("n", "—")),
        *(figure(p.get(k), unit, "never") for k in PERCENTILES),
        esc("—" if never is None else never),
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
            out.append(f"<div><h3>{esc(what)} (seconds after the fault)</h3>{chart}</div>")
    for c in agg.get("convergence", []):
        step = str(c.get("step"))
        vals = _values(c.get("seconds"))
        rows.append(_prow(f"converged after {step}", c.get("seconds"), "s"))
        if vals is not None:
            chart = cdf_chart(
                [Series("converged", vals, "#1565c0")],
                _bound_for(agg, step, ("converged", "alive")),
            )
            out.append(f"<div><h3>Convergence after {esc(step)} (seconds)</h3>{chart}</div>")
    counts = ("false_suspicions", "false_deaths", "expected_suspicions", "expected_deaths")
    rows += [_prow(f"{k.replace('_', ' ')} per run", agg[k], "events") for k in counts if k in agg]
    if not rows:
        return []
    header = ["figure", "runs", "p50", "p90", "p99", "max", "never (runs)"]
    return [
        "<h2>Distributions over the runs</h2>",
        table(header, rows),
        f"<div class='charts'>{''.join(out)}</div>" if out else "",
    ]


def _failed_runs(results: dict[str, Any]) -> list[str]:
    bad = [r for r in results.get("runs") or [] if r.get("verdict") != "pass"]
    cols = [
        *text_cols(("seed", "seed")),
        (
            "verdict",
            lambda r: f"<span class='{esc(r.get('verdict'))}'>{esc(r.get('verdict'))}</span>",
        ),
        ("duration", lambda r: figure(r.get("duration"), "s")),
        (
            "what failed",
            lambda r: esc("; ".join(map(str, r.get("failed") or [])) or r.get("error")),
        ),
    ]
    more = f" (the first 50 of {len(bad)})" if len(bad) > 50 else ""
    return section(f"Runs that did not pass{more}", bad[:50], cols)
