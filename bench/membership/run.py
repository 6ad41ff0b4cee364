"""Entry point: ``python -m bench.membership [--quick]``; prints tables, saves JSON.

Real processes: for N in {5, 10, 20}, N rtsim swim nodes (``python -m swim.testing``) and N
Serf agents, both on memberlist's LAN profile (Serf's default: 1 s period, 500 ms probe
timeout, 3 indirect helpers, suspicion mult 4); five ``kill -9`` repetitions each, alternating
systems. Reported: first suspect, first dead, full dead (seconds after the kill; median and
min..max), completeness, false dead verdicts, and RSS / CPU / packets per node at rest.
Simulated network: dissemination at N in {100, 1000} (full machines) and {100, 1000, 10000}
(the epidemic reduced variant; see ``sim.py``).
"""

from __future__ import annotations

import argparse
import json
import platform
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from swim import SwimConfig

from .procs import RtsimCluster, SerfCluster
from .sim import epidemic_run, machine_run, speed_run

RESULTS = Path(__file__).resolve().parents[1] / "results"
LAN = SwimConfig.lan()
DETECT_TIMEOUT = 120.0


def at_rest(cluster: Any, window: float) -> dict[str, Any]:
    procs = [psutil.Process(pid) for pid in cluster.pids()]
    cpu0 = [sum(p.cpu_times()[:2]) for p in procs]
    pk0 = cluster.packets_sent()
    t0 = time.monotonic()
    time.sleep(window)
    dt = time.monotonic() - t0
    cpu = [(sum(p.cpu_times()[:2]) - c) / dt * 100 for p, c in zip(procs, cpu0, strict=True)]
    pk = [(b - a) / dt for a, b in zip(pk0, cluster.packets_sent(), strict=True)]
    rss = [p.memory_info().rss / 2**20 for p in procs]
    return {
        "rss_mib_median": statistics.median(rss),
        "cpu_pct_median": statistics.median(cpu),
        "packets_per_node_s": statistics.median(pk) if min(pk) >= 0 else None,
    }


def one_run(system: str, n: int, rest_window: float | None) -> dict[str, Any]:
    cluster: Any = RtsimCluster(n, LAN.as_dict()) if system == "rtsim" else SerfCluster(n)
    try:
        cluster.start()
        converge = cluster.wait_converged()
        time.sleep(2.0)
        rest = at_rest(cluster, rest_window) if rest_window else None
        victim = n - 1
        t_kill = cluster.kill(victim)
        t0 = time.monotonic()
        while time.monotonic() - t0 < DETECT_TIMEOUT and not cluster.all_dead_seen(victim):
            time.sleep(0.2)
        time.sleep(0.5)
        det = cluster.detections(victim, t_kill)
        return {"system": system, "n": n, "converge_s": converge, **det, "rest": rest}
    finally:
        cluster.stop()


def summarize(runs: list[dict[str, Any]], key: str) -> dict[str, Any]:
    vals = [r[key] for r in runs if r[key] is not None]
    if not vals:
        return {"median": None, "min": None, "max": None, "n": 0}
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals)}


def real_benchmark(sizes: list[int], reps: int, rest_window: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for n in sizes:
        runs: dict[str, list[dict[str, Any]]] = {"rtsim": [], "serf": []}
        for rep in range(reps):
            for system in ("rtsim", "serf") if rep % 2 == 0 else ("serf", "rtsim"):
                r = None
                for _attempt in range(2):  # a launch can fail on a busy host: retry once
                    try:
                        r = one_run(system, n, rest_window if rep == 0 else None)
                        break
                    except (RuntimeError, OSError) as exc:
                        print(f"  N={n} rep={rep} {system}: run failed ({exc}); retrying")
                if r is None:
                    continue
                runs[system].append(r)
                print(
                    f"  N={n} rep={rep} {system}: suspect={r['first_suspect']} "
                    f"dead={r['first_dead']} full={r['full_dead']} "
                    f"complete={r['completeness']}",
                    flush=True,
                )
        entry: dict[str, Any] = {}
        for system, rs in runs.items():
            entry[system] = {
                "runs": rs,
                **{k: summarize(rs, k) for k in ("first_suspect", "first_dead", "full_dead")},
                "completeness_min": min(r["completeness"] for r in rs),
                "converge_s": summarize(rs, "converge_s"),
                "false_dead": sum(r["false_dead"] for r in rs),
                "rest": next((r["rest"] for r in rs if r["rest"]), None),
            }
        ratio = {}
        for k in ("first_suspect", "first_dead", "full_dead"):
            a, b = entry["rtsim"][k]["median"], entry["serf"][k]["median"]
            ratio[k] = a / b if a is not None and b else None
        entry["ratio_rtsim_over_serf"] = ratio
        out[str(n)] = entry
    return out


def fmt(v: Any, spec: str = ".2f") -> str:
    return "-" if v is None else format(v, spec)


def print_tables(res: dict[str, Any]) -> None:
    print("\nkill -9 of one member, seconds after the kill: median [min..max] over repetitions")
    print(
        f"{'N':>3} {'system':6} {'first suspect':>20} {'first dead':>20} {'full dead':>20} "
        f"{'compl':>5} {'falseD':>6} {'RSS MiB':>7} {'CPU %':>6} {'pkt/s':>6}"
    )
    for n, entry in res["real"].items():
        for system in ("rtsim", "serf"):
            e = entry[system]
            cells = [
                f"{fmt(e[k]['median'])} [{fmt(e[k]['min'])}..{fmt(e[k]['max'])}]"
                for k in ("first_suspect", "first_dead", "full_dead")
            ]
            rest = e["rest"] or {}
            print(
                f"{n:>3} {system:6} {cells[0]:>20} {cells[1]:>20} {cells[2]:>20} "
                f"{e['completeness_min']:>5.2f} {e['false_dead']:>6} "
                f"{fmt(rest.get('rss_mib_median'), '.1f'):>7} "
                f"{fmt(rest.get('cpu_pct_median'), '.2f'):>6} "
                f"{fmt(rest.get('packets_per_node_s'), '.1f'):>6}"
            )
        conv = {s: entry[s]["converge_s"]["median"] for s in ("rtsim", "serf")}
        print(
            f"{n:>3} launch-to-converged (every node lists N alive; polled every 0.25 s) "
            f"median: rtsim {fmt(conv['rtsim'])} s, serf {fmt(conv['serf'])} s"
        )
        r = entry["ratio_rtsim_over_serf"]
        print(
            f"{n:>3} ratio  rtsim/serf: suspect {fmt(r['first_suspect'])}, "
            f"dead {fmt(r['first_dead'])}, full dead {fmt(r['full_dead'])}"
        )
    print("\nsimulated network (LAN profile), full machines: one kill")
    for r in res["sim_machines"]:
        print(
            f"  N={r['n']:>5}: first suspect {r['first_suspect_s']:.2f} s, rumour reaches all "
            f"in {r['rumour_gossip_rounds']:.1f} gossip rounds, full dead {r['full_dead_s']:.2f}"
            f" s, complete={r['complete']}, false dead={r['false_dead']}, "
            f"wall {r['wall_s']:.1f} s"
        )
    print("\nsimulator speed (protocol periods summed over members, per wall second)")
    for r in res["sim_speed"]:
        print(f"  N={r['n']:>5}: {r['periods_per_wall_s']:.0f} periods/s")
    print("\nsimulated dissemination (reduced epidemic variant): gossip rounds until all know")
    for r in res["sim_epidemic"]:
        print(
            f"  N={r['n']:>5}: {r['gossip_rounds']} rounds, ln N = {r['ln_n']:.2f}, "
            f"rounds/ln N = {r['rounds_per_ln_n']:.2f}, informed {r['informed']:.3f}"
        )


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m bench.membership", description=__doc__)
    ap.add_argument("--quick", action="store_true", help="N=5 only, 2 repetitions, small sims")
    ap.add_argument("--no-real", action="store_true", help="skip the OS-process comparison")
    ap.add_argument("--out", default=None, help="JSON output path")
    args = ap.parse_args(argv)
    # SIGTERM unwinds like Ctrl-C, so every launched process is stopped in a finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    sizes, reps, window = ([5], 2, 5.0) if args.quick else ([5, 10, 20], 5, 10.0)
    sim_sizes, epi_sizes = ([100], [100, 1000]) if args.quick else ([100, 1000], [100, 1000, 10000])
    res: dict[str, Any] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%S"),
        "host": {
            "cpus": psutil.cpu_count(),
            "python": platform.python_version(),
            "load_avg_at_start": list(psutil.getloadavg()),
        },
        "profile": LAN.as_dict(),
        "method": __doc__,
    }
    res["real"] = {} if args.no_real else real_benchmark(sizes, reps, window)
    res["sim_machines"] = [machine_run(n, LAN, seed=n) for n in sim_sizes]
    res["sim_epidemic"] = [epidemic_run(n, LAN, seed=n) for n in epi_sizes]
    res["sim_speed"] = [speed_run(n, LAN) for n in (5, 100)]
    res["host"]["load_avg_at_end"] = list(psutil.getloadavg())
    print_tables(res)
    RESULTS.mkdir(parents=True, exist_ok=True)
    name = "membership-quick.json" if args.quick else "membership.json"
    path = Path(args.out) if args.out else RESULTS / name
    path.write_text(json.dumps(res, indent=2, default=str))
    print(f"\nsaved {path}")


if __name__ == "__main__":
    main()
