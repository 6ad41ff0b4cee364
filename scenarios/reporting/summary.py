"""The lines ``rt_cluster scenario`` ends with: the expectations, detection, false positives,
how the events were read, the verdict (one run) or the pass rates (``--runs``).
"""

from __future__ import annotations

from typing import Any

__all__ = ["collection_lines", "collection_notes", "summary", "summary_many"]


def summary(results: dict[str, Any]) -> str:
    lines = []
    for e in results["expectations"]:
        m = e.get("measured")
        unit = e.get("unit", "s")
        unit = " s" if unit == "s" else "" if unit == "events" else f" {unit}"
        meas = f" (measured {m:.3g}{unit})" if isinstance(m, int | float) else ""
        lines.append(f"  {e['status']:<14} {e['description']}{meas}")
    for d in results["detection"]:
        sus, first, full = (
            "-" if d[k] is None else f"{d[k]:.2f} s"
            for k in ("first_suspect", "first_dead", "full_dead")
        )
        lines.append(
            f"  detection of {d['subject']} after {d['kind']}: first suspect {sus}, "
            f"first dead {first}, full dead {full}"
        )
    lines.append(
        f"  false suspicions {results['false_suspicions']['count']}, false deaths "
        f"{results['false_deaths']['count']} (expected: "
        f"{results.get('expected_suspicions', {}).get('count', 0)} suspicions, "
        f"{results.get('expected_deaths', {}).get('count', 0)} deaths)"
    )
    lines.extend(collection_lines(results.get("collection")))
    if results.get("property"):
        p = results["property"]
        lines.append(
            f"  {p['status']:<14} property {p['name']}"
            + (f": {p['detail']}" if p["detail"] else "")
        )
    if results.get("events_digest"):
        lines.append(f"  events digest {results['events_digest']}")
    if results.get("error"):
        lines.append(f"  error: {results['error']}")
    lines.append(f"verdict: {results['verdict'].upper()}")
    return "\n".join(lines)


def summary_many(results: dict[str, Any]) -> str:
    """The end of a ``--runs`` run: pass rates and percentiles, then the verdict."""
    agg = results["aggregate"]
    lines = []
    for e in agg["expectations"]:
        m = e["measured"]
        rate = "n/a" if e["pass_rate"] is None else f"{e['passed']}/{e['applicable']}"
        unit = " s" if m["unit"] == "s" else ""
        figures = ", ".join(
            f"{k} {'never' if m[k] is None else f'{m[k]:.3g}{unit}'}"
            for k in ("p50", "p90", "p99", "max")
        )
        lines.append(f"  {rate:>9}  {e['description']} ({figures})")
    fs, fd = agg["false_suspicions"], agg["false_deaths"]
    lines.append(
        f"  false suspicions per run: p50 {fs['p50']:g}, max {fs['max']:g}; "
        f"false deaths per run: max {fd['max']:g}"
    )
    lines.append(
        f"runs passed: {agg['passed']}/{agg['runs']} (required {results['pass_rate_required']:.1%})"
        f"; verdict: {results['verdict'].upper()}"
    )
    return "\n".join(lines)


def collection_notes(collection: dict[str, Any] | None) -> list[tuple[bool, str]]:
    """What was notable in reading the nodes' events (``collect``): (a problem?, the words)."""
    out = []
    for n in (collection or {}).get("nodes", ()):
        i = n["node_id"]
        if n["dropped"]:
            out.append(
                (
                    True,
                    f"events: node {i} lost {n['dropped']} before they were read (its history "
                    "ring overflowed); the analysis misses them",
                )
            )
        if not n["complete"]:
            out.append((True, f"events: node {i} was not read to the end: {n['error']}"))
        if n["restarts"]:
            times = "once" if n["restarts"] == 1 else f"{n['restarts']} times"
            out.append((False, f"events: node {i} restarted {times}; every process's were read"))
    return out


def collection_lines(collection: dict[str, Any] | None) -> list[str]:
    """The summary's lines for ``collection_notes``."""
    return [f"  {text}" for _, text in collection_notes(collection)]
