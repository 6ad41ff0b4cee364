"""``python -m bench.summary [--readme]``: the scale-and-cost table from the saved figures.

Reads what the benchmarks saved under bench/results/ (``idle``, ``cluster``, ``sim``,
``wholesim``, ``storage``, ``api``, ``chaos``, ``explore``, ``memberlist``, ``verdicts``), one
row per goal: the figure, the peer or limit it is held against, the goal and whether the saved
run met it (the search benchmarks' rows are ``bench.searchrows``'s).
Prints the table as Markdown; ``--readme`` also writes it into README.md between the
``bench:start`` and ``bench:end`` markers. ``make bench`` runs it last, so the README shows
the latest figures. A benchmark not run yet shows as "not measured". Nothing is measured here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.searchrows import Row, explore_rows, verdict_rows

RESULTS = Path(__file__).resolve().parent / "results"
README = Path(__file__).resolve().parents[1] / "README.md"
START, END = "<!-- bench:start -->", "<!-- bench:end -->"


def _load(name: str) -> Any:
    try:
        return json.loads((RESULTS / f"{name}.json").read_text())
    except (OSError, ValueError):
        return None


def _idle(d: Any) -> Iterator[Row]:
    ratio = d.get("goals", {}).get("cpu_ratio_to_serf", 1.0)
    for r in d["rows"]:
        n, ours, serf = r["nodes"], r["rtsim"], r["serf"]
        yield (
            f"idle CPU per node at rest, {n} nodes (% of a core)",
            f"{ours['cpu_pct_mean']:.3f}",
            f"Serf {serf['cpu_pct_mean']:.3f} beside it",
            "<= Serf's" if ratio == 1.0 else f"<= {ratio:g} x Serf's",
            ours["cpu_pct_mean"] <= ratio * serf["cpu_pct_mean"],
        )
    r = next((r for r in d["rows"] if r["nodes"] == 20), d["rows"][-1])
    ours, serf = r["rtsim"], r["serf"]
    goal = d.get("goals", {}).get("pss_mb_per_node", 10.0)
    yield (
        f"memory per node, {r['nodes']} nodes (PSS / private MB)",
        f"{ours['pss_mb']:.1f} / {ours['uss_mb']:.1f}",
        f"Serf {serf['pss_mb']:.1f} / {serf['uss_mb']:.1f}",
        f"PSS <= {goal:g} MB",
        ours["pss_mb"] <= goal,
    )
    watched = ours.get("with_watcher")
    if watched:
        yield (
            f"memory per node with its watcher, {r['nodes']} nodes (PSS / private MB)",
            f"{watched['pss_mb']:.1f} / {watched['uss_mb']:.1f}",
            f"Serf {serf['pss_mb']:.1f} / {serf['uss_mb']:.1f}",
            "",
            None,
        )


def _cluster(d: Any) -> Iterator[Row]:
    serf = {r["nodes"]: r for r in d.get("up", []) if r.get("system") == "serf"}
    for r in d.get("up", []):
        if r.get("system") != "rtsim" or r["nodes"] not in (100, 250):
            continue
        peer = serf.get(r["nodes"])
        took = r.get("converged_s")
        yield (
            f"{r['nodes']} real nodes up and converged (s)",
            _took(r),
            f"Serf {peer['converged_s']:.1f}" if peer and peer.get("converged_s") else "",
            "<= 20 s" if r["nodes"] == 250 else "",
            None if r["nodes"] != 250 else took is not None and took <= 20.0,
        )
    for r in d.get("rest", []):
        what, key = (
            ("false suspicions", "false_suspicions")
            if r["run"] == "rest"
            else ("false deaths", "false_deaths")
        )
        loss = f" at {r['loss_pct']:g} % loss" if r["loss_pct"] else " at rest"
        yield (
            f"{r['nodes']} real nodes{loss}, {r['minutes']:g} min: {what}",
            str(r[key]),
            f"CPU {r['cpu_pct_per_node']:.2f} % a node",
            f"0 in 10 min{' (shorter run)' if r['minutes'] < 10 else ''}",
            r[key] == 0 and r["minutes"] >= 10,
        )


def _serf_idle_cpu_at_20() -> float | None:
    """Serf's CPU per agent at rest at 20 agents (bench.idle), the yardstick of the thousand
    run's CPU goal (half of it)."""
    rows = (_load("idle") or {}).get("rows", [])
    at20 = next((r for r in rows if r.get("nodes") == 20), None)
    return None if at20 is None else float(at20["serf"]["cpu_pct_mean"])


def _took(r: dict[str, Any]) -> str:
    """A start's seconds to convergence, or what stopped it."""
    took = r.get("converged_s")
    return f"failed: {r.get('error', 'no figure')}" if took is None else f"{took:.1f}"


def _thousand(d: Any) -> Iterator[Row]:
    serf = {r["nodes"]: r for r in d.get("up", []) if r.get("system") == "serf"}
    for r in d.get("rest", []):
        n, took = r["nodes"], r.get("converged_s")
        peer = serf.get(n)
        beside = (
            "" if peer is None
            else f"Serf {n}: {peer['converged_s']:.1f} s" if peer.get("converged_s")
            else f"Serf {n}: {peer.get('error', 'did not converge')}"
        )  # fmt: skip
        yield (
            f"{n} real nodes up and converged (s)",
            _took(r),
            beside,
            "<= 90 s",
            took is not None and took <= 90.0,
        )
        if "sizes_seen_max" in r:
            yield (
                f"{n} real nodes, the start: false suspicions / most cluster sizes a node saw",
                f"{r['start_false_suspicions']} / {r['sizes_seen_max']}",
                f"median sizes a node saw {r['sizes_seen_median']:g}",
                "0 / <= 20",
                r["start_false_suspicions"] == 0 and r["sizes_seen_max"] <= 20,
            )
        if "false_suspicions" not in r:
            continue
        yield (
            f"{n} real nodes at rest, {r['minutes']:g} min: false suspicions / loop lag max (ms)",
            f"{r['false_suspicions']} / {r['loop_lag_ms_max_seen']:g}",
            f"CPU {r['cpu_pct_per_node']:.3f} % a node; "
            f"PSS {r.get('pss_mb_mean', 0):.1f} MB a node",
            "0 / <= 100 ms in 10 min",
            r["false_suspicions"] == 0
            and r["loop_lag_ms_max_seen"] <= 100.0
            and r["minutes"] >= 10,
        )
        yardstick = _serf_idle_cpu_at_20()
        yield (
            f"{n} real nodes at rest: CPU of the whole cluster (% of a core)",
            f"{r['cpu_pct_total']:.0f}",
            "" if yardstick is None else f"Serf {yardstick:.3f} a node at 20 agents (bench.idle)",
            "<= 100",
            r["cpu_pct_total"] <= 100.0,
        )


def _sim(d: Any) -> Iterator[Row]:
    for r in d.get("rest", []):
        if r["n"] == 1000:
            yield (
                "simulated 1,000 nodes at rest (virtual s per CPU s)",
                f"{r['speed_cpu']:.1f}x",
                f"wall {r['speed_wall']:.1f}x",
                ">= 10x",
                r["speed_cpu"] >= 10.0,
            )
    python = {r["n"]: r for r in d.get("kill", []) if r.get("swim") == "python"}
    for r in d.get("kill", []):
        if r["n"] in (1000, 10000) and r.get("swim") != "python":  # the whole command (issue 45)
            beside = f"; as Python {python[r['n']]['wall_s']:.1f} s" if r["n"] in python else ""
            speed = r["scenario_virtual_s"] / r["wall_s"] if r.get("wall_s") else 0.0
            big = r["n"] == 10000
            passed = r.get("verdict") == "pass"
            yield (
                f"kill_one --sim -n {r['n']}, whole command: real time x, verdict",
                f"{speed:.1f}x, {r.get('verdict')}",
                f"{r['wall_s']:.1f} s for {r['scenario_virtual_s']:.0f} virtual s, "
                f"peak RSS {r['peak_rss_mib']:.0f} MiB{beside}",
                ">= 1x, <= 1024 MiB" if big else ">= 20x",
                passed and (speed >= 1.0 and r["peak_rss_mib"] <= 1024 if big else speed >= 20.0),
            )


def _wholesim(d: Any) -> Iterator[Row]:
    rows = {r["case"]: r for r in d["rows"]}
    for case, what in (("writes", "writes"), ("kill", "writes, a member's node killed")):
        r = rows[case]
        yield (
            f"whole-node sim, 4 nodes, an array, {d['virtual']:.0f} virtual s of {what}",
            f"{r['virtual_per_wall_s']:.1f}x",
            f"{r['acknowledged']}/{r['sent']} writes, {r['check']['lost_count']} lost; "
            f"idle {rows['idle']['virtual_per_wall_s']:.0f}x",
            ">= 5x real time",
            r["virtual_per_wall_s"] >= 5.0,
        )


def _storage(d: Any) -> Iterator[Row]:
    for r in d["results"]:
        if "goal" not in r:
            continue
        shown = f"{r['mbps']:.0f} MB/s" if "mbps >=" in r["goal"] else f"{r['ratio']:.2f}"
        yield (
            r["operation"],
            shown,
            f"{r['raw']} {r['raw_mbps']:.0f} MB/s",
            r["goal"],
            bool(r.get("goal_met")),
        )


def _api(d: Any) -> Iterator[Row]:
    for conns, r in d["derived"]["health_over_bare"].items():
        yield (
            f"/api/health / bare quart-trio, {conns} connection(s) (req/s)",
            f"{r['rps_median']:.2f}",
            f"CPU per request {r['cpu_median']:.2f}",
            ">= 1.0",
            r["rps_median"] >= 1.0 and r["cpu_median"] >= 1.0,
        )


def _chaos(d: Any) -> Iterator[Row]:
    for r in d.get("start", []):
        yield (
            f"chaos fixture, 3 nodes {r['mode']}: call to converged (s, median)",
            f"{r['fixture_s']['median']:.2f}",
            f"rt_cluster up{' --netns' if r['mode'] == 'netns' else ''} "
            f"{r['up_s']['median']:.2f} beside it",
            "<= 5 s, <= up + 1 s",
            bool(r["met"]),
        )
    if "sim" in d:
        r = d["sim"]
        yield (
            "chaos fixture, sim: cost per test (ms, median)",
            f"{r['per_test_ms']['median']:.1f}",
            f"{r['tests']} tests with and without a cluster",
            "<= 50 ms",
            bool(r["met"]),
        )
    if "simtest" in d:
        r = d["simtest"]
        yield (
            "chaos test in sim: open 3, converged, kill, dead (ms per test, median)",
            f"{r['wall_ms']['median']:.1f}",
            f"p90 {r['wall_ms']['p90']:.1f}, CPU {r['cpu_ms']['median']:.1f} ({r['tests']} seeds)",
            f"<= {r['goal_ms']:g} ms",
            bool(r["met"]),
        )
    if "leftovers" in d:
        r = d["leftovers"]
        left = r["live_in_ledgers"] + r["processes_naming_the_folder"] + r["namespaces_and_links"]
        yield (
            f"left after {r['tests_started']} {r['mode']} chaos tests (failures, -x, SIGINT)",
            str(left),
            f"{r['interrupted_sessions']} sessions SIGINTed",
            "0",
            bool(r["met"]),
        )


def _memberlist(d: Any) -> Iterator[Row]:
    s = d["summary"]
    ours, serf = s["killed_agent_dead_at_rtsim_s"], s["killed_agent_dead_at_first_other_agent_s"]
    yield (
        "mixed cluster, killed Serf agent dead at the rtsim node (s, median of runs)",
        f"{ours['median']:.2f}",
        f"at the first other agent {serf['median']:.2f}, same runs",
        "",
        None,
    )
    back = s["killed_rtsim_node_failed_at_last_agent_s"]
    again = s["restarted_rtsim_node_alive_at_every_agent_s"]["median"]
    yield (
        "mixed cluster, killed rtsim node failed at every agent (s, median)",
        f"{back['median']:.2f}",
        f"restart alive again at every agent {again:.2f} s",
        "<= 15 s",
        back["max"] <= 15.0,
    )


SOURCES: tuple[tuple[str, Callable[[Any], Iterator[Row]]], ...] = (
    ("idle", _idle),
    ("cluster", _cluster),
    ("thousand", _thousand),
    ("sim", _sim),
    ("wholesim", _wholesim),
    ("storage", _storage),
    ("api", _api),
    ("chaos", _chaos),
    ("explore", explore_rows),
    ("memberlist", _memberlist),
    ("verdicts", verdict_rows),
)


def table() -> str:
    lines = [
        "| figure | rtsim | peer / beside | goal | met |",
        "|---|---|---|---|---|",
    ]
    taken = []
    for name, rows in SOURCES:
        d = _load(name)
        when = (d or {}).get("when") or (d or {}).get("updated") or ""
        if when:
            taken.append(f"`bench.{name}` {when[:16].replace('T', ' ')}")
        try:
            got = list(rows(d)) if d is not None else []
        except (KeyError, TypeError, ZeroDivisionError):
            got = []
        if not got:
            lines.append(f"| bench.{name} | not measured | | | |")
        for figure, ours, peer, goal, met in got:
            mark = "" if met is None else ("yes" if met else "**no**")
            lines.append(f"| {figure} | {ours} | {peer} | {goal} | {mark} |")
    lines += ["", f"Taken: {', '.join(taken)}." if taken else "Nothing measured yet."]
    return "\n".join(lines) + "\n"


def write_readme(text: str) -> None:
    readme = README.read_text()
    head, start, rest = readme.partition(START)
    _, end, tail = rest.partition(END)
    if not start or not end:
        raise SystemExit(f"README.md has no {START} ... {END} section")
    README.write_text(f"{head}{START}\n{text}{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.summary", description=__doc__)
    ap.add_argument("--readme", action="store_true", help="also write the table into README.md")
    args = ap.parse_args(argv)
    text = table()
    sys.stdout.write(text)
    if args.readme:
        write_readme(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
