"""The bounds of the load test (``bench.load``) and its table.

Rules:
1. The bounds are the issue's, and they are wall-clock figures on purpose: a node under load
   must answer ``/api/health`` fast, not eventually. Each names the limit it checks.
2. ``problems(report)`` lists every bound a report breaks (empty: all held); ``table`` shows
   the figures. Both read only the report, so a saved ``bench/results/load.json`` can be
   judged again.
"""

from __future__ import annotations

import json
from typing import Any

from cluster.runtime import FORWARD_TIMEOUT
from dashboard.intake import BODY_TIMEOUT

__all__ = ["FD_SLACK", "HEALTH_P99", "PEER_BACK", "problems", "table"]

HEALTH_P99 = 1.0  # seconds: the bound on /api/health's 99th percentile
SLOW_CUT = BODY_TIMEOUT + 2.0  # seconds: a slow POST's 408 (intake's bound plus a busy node)
FORWARD_BOUND = FORWARD_TIMEOUT + 1.5  # seconds: the 5 s bound, the way in and back when busy
PEER_BACK = 30.0  # seconds for the resumed peer to be alive in node 0's table again
FD_SLACK = 16  # descriptors node 0 may hold beyond its count before the load, afterwards


def _kind_problems(report: dict[str, Any]) -> list[str]:
    config = report["config"]
    out = []
    gets = report["gets"]
    failed = {s: n for s, n in gets["statuses"].items() if s.startswith("5")}
    if failed or gets["outcomes"] or not gets["count"]:
        out.append(
            f"node-local GETs: {gets['count']} answered, 5xx {failed}, "
            f"without an answer {gets['outcomes']}"
        )
    slow = report["slow_posts"]
    cut = slow["statuses"].get("408", 0)
    if cut < config["slow_posts"] or set(slow["statuses"]) - {"408"} or slow["outcomes"]:
        out.append(
            f"slow POSTs: {cut} cut by 408 (at least {config['slow_posts']} expected), "
            f"statuses {slow['statuses']}, without an answer {slow['outcomes']}"
        )
    if (slow["max_s"] or 0) > SLOW_CUT:
        out.append(f"a slow POST was held {slow['max_s']} s (bound {SLOW_CUT:g} s)")
    fwd = report["forwards"]
    if fwd["count"] < config["forwards"] or set(fwd["statuses"]) - {"503"} or fwd["outcomes"]:
        out.append(
            f"forwards to the paused peer: {fwd['count']} answered (at least "
            f"{config['forwards']} expected), statuses {fwd['statuses']}, "
            f"without an answer {fwd['outcomes']}"
        )
    if (fwd["max_s"] or 0) > FORWARD_BOUND:
        out.append(f"a forward took {fwd['max_s']} s (bound {FORWARD_BOUND:g} s)")
    return out


def problems(report: dict[str, Any]) -> list[str]:
    """Every bound of rule 3 that ``report`` breaks (empty: all held)."""
    health, out = report["health"], []
    if health["p99_s"] is None or health["p99_s"] >= HEALTH_P99:
        out.append(f"/api/health p99 {health['p99_s']} s (bound {HEALTH_P99:g} s)")
    if health["errors"] or health["count"] < 10:
        out.append(f"/api/health: {health['count']} answered 200, errors {health['errors']}")
    out += report["deaths"]
    for when in ("rpc_while_held", "rpc_after"):
        if not report[when]["ok"]:
            out.append(f"the runtime port did not answer identity ({when}): {report[when]}")
    out += _kind_problems(report)
    if report["peer_back_s"] is None:
        out.append(f"the resumed peer was not back in node 0's table within {PEER_BACK:g} s")
    node = report["node0"]
    if not node["fds_settled"]:
        out.append(
            f"node 0 holds {node['fds_after']} descriptors after the load, "
            f"{node['fds_before']} before (slack {FD_SLACK})"
        )
    return out


def _ms(x: float | None) -> str:
    return "-" if x is None else f"{x * 1000:.0f}"


def table(report: dict[str, Any]) -> str:
    """The figures of ``report`` as a few lines of text."""
    lines = [
        f"{'kind':<22} {'answered':>8} {'per s':>7} {'p50 ms':>7} {'p90 ms':>7} "
        f"{'p99 ms':>7} {'max ms':>7}  statuses / without an answer"
    ]
    for name, key in (
        ("/api/health (probe)", "health"),
        ("node-local GETs", "gets"),
        ("slow POSTs", "slow_posts"),
        ("forwards to paused", "forwards"),
    ):
        k = report[key]
        rest = k.get("errors") if key == "health" else f"{k['statuses']} / {k['outcomes']}"
        lines.append(
            f"{name:<22} {k['count']:>8} {k.get('per_s') or '':>7} {_ms(k['p50_s']):>7} "
            f"{_ms(k['p90_s']):>7} {_ms(k['p99_s']):>7} {_ms(k['max_s']):>7}  {rest}"
        )
    idle, node = report["idle"], report["node0"]
    lines.append(f"idle runtime connections: {json.dumps(idle)}")
    held, after = report["rpc_while_held"], report["rpc_after"]
    lines.append(
        f"identity RPC while held: ok={held['ok']} {held.get('seconds')} s; "
        f"after: ok={after['ok']}; peer back after {report['peer_back_s']} s"
    )
    lines.append(
        f"node 0 descriptors: {node['fds_before']} before, {node['fds_peak']} at the peak, "
        f"{node['fds_after']} after; RSS MiB: {node['rss_mb_before']}, "
        f"{node['rss_mb_peak']}, {node['rss_mb_after']}"
    )
    lines.append(f"node 0 answers by status: {node['http_statuses']}")
    verdict = report["problems"] or ["every bound held"]
    return "\n".join([*lines, *(f"BOUND: {p}" for p in verdict)])
