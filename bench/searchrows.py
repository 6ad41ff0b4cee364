"""The rows of the search benchmarks in ``bench.summary``'s table: ``bench.explore`` (its
speed, the planted bugs, the searches of main, with and without storage) and
``bench.verdicts`` (the storage scenarios' verdicts, simulated and real).

Each function takes what its benchmark saved and yields one row per goal: the figure, rtsim's
value, the peer or limit beside it, the goal and whether it was met (None: no goal).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

__all__ = ["STORAGE_FILES", "Row", "explore_rows", "verdict_rows"]

Row = tuple[str, str, str, str, bool | None]  # figure, rtsim, peer or limit, goal, met


def explore_rows(d: Any) -> Iterator[Row]:
    r = d["speed"]
    yield (
        f"explore: runs per second, 5 nodes, --jobs {r['jobs']}",
        f"{r['runs_per_s']:.1f}",
        f"{r['virtual_x']:.0f}x real time",
        ">= 10",
        r["runs_per_s"] >= 10.0,
    )
    for r in d.get("command", []):
        if r["jobs"] < 2:
            continue
        yield (
            f"explore, whole command: runs per second, 5 nodes, --jobs {r['jobs']}",
            f"{r['runs_per_s']:.1f}",
            f"{r['runs_per_cpu_s']:.1f} per CPU s, {r['runs']} runs",
            ">= 100",
            bool(r["met"]),
        )
    rows = d["plants"]
    plants = [p for p in rows if p.get("faults", "all") != "old_kinds"]
    found = [p for p in plants if p["found"]]
    blind = [p["plant"] for p in rows if p.get("faults") == "old_kinds" and p["found"]]
    yield (
        "explore: planted bugs found (within the budget)",
        f"{len(found)} of {len(plants)}",
        ", ".join(f"{p['plant']} {p.get('found_after_s', '-')} s" for p in plants)
        + "; with the old fault kinds only: "
        + (", ".join(blind) + " found" if blind else "none found, as it should be"),
        "all, within 10 min",
        len(found) == len(plants) and not blind,
    )
    if found:
        steps, shrink = max(p["steps"] for p in found), max(p["shrink_s"] for p in found)
        same = min(p["replays_same_digest"] for p in found)
        yield (
            "explore: steps after shrinking (most) / shrink s (longest)",
            f"{steps} / {shrink:.1f}",
            f"replays with the same digest: {same} of 10 (fewest)",
            "<= 5 steps, <= 60 s, 10 of 10",
            steps <= 5 and shrink <= 60 and same == 10,
        )
    c = d["clean"]
    seeds = c.get("seeds", [])
    yield (
        f"explore: violations on the unmutated protocol in {c['seconds'] / 60:.0f} min, "
        f"sizes {c.get('sizes', '3-5')}",
        str(len(c["violations"])),
        f"{c['runs']} runs, {len(seeds)} seeds of the clock ({', '.join(map(str, seeds[:3]))}"
        f"{', ...' if len(seeds) > 3 else ''})",
        "0 in 120 min, sizes 3-7",
        not c["violations"] and c["seconds"] >= 7200 and c.get("sizes") == "3-7",
    )
    yield from _explore_storage(d)


def _explore_storage(d: Any) -> Iterator[Row]:
    """Issue 47's rows: the storage plants' find times, and main searched with storage."""
    plants = d.get("storage") or []
    if plants:
        met = [p for p in plants if p.get("met")]
        yield (
            "explore --storage: planted storage bugs found within 10 min, --jobs 2",
            f"{len(met)} of {len(plants)}",
            ", ".join(f"{p['plant']} {p.get('found_after_s', '-')} s" for p in plants),
            "all 3, within 10 min",
            len(met) == len(plants) == 3,
        )
    c = d.get("storage_clean")
    if c:
        yield (
            f"explore --storage: violations on main in {c['seconds'] / 60:.0f} min",
            str(len(c["violations"])),
            f"{c['runs']} runs, {len(c.get('seeds', []))} seeds of the clock",
            "0 in 60 min",
            not c["violations"] and c["seconds"] >= 3600,
        )


STORAGE_FILES = ("array_partition", "member_disk_fails", "member_node_dies", "member_node_paused")


def verdict_rows(d: Any) -> Iterator[Row]:
    """Issue 47: the library's storage scenarios give the same verdict over their many runs
    in the simulator (whole nodes) and on real processes (every run passed, or not)."""
    scenarios = d.get("scenarios", {})
    shown, agree = [], 0
    for name in STORAGE_FILES:
        sim, real = (scenarios.get(name, {}).get(m) for m in ("sim", "real"))
        if sim is None or real is None:
            shown.append(f"{name} {'no sim' if sim is None else 'no real'} runs")
            continue
        same = (sim["passed"] == sim["runs"]) == (real["passed"] == real["runs"])
        agree += same
        counts = f"{sim['passed']}/{sim['runs']} sim, {real['passed']}/{real['runs']} real"
        shown.append(f"{name} {counts}")
    yield (
        "storage scenarios: the same verdict in sim (whole nodes) and real, over many runs",
        f"{agree} of {len(STORAGE_FILES)}",
        "; ".join(shown),
        "all agree",
        agree == len(STORAGE_FILES),
    )
