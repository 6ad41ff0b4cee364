"""``rt_cluster explore``: search the fault space on the simulated network for a property
violation nobody scripted, shrink it to a 1-minimal schedule, check it replays, write it as a
scenario file (docs/explore.md).

``drawing`` draws one run's scenario from its seed; ``playing`` plays and judges it;
``judge.properties`` holds what is checked; ``jobs`` hands the runs out in batches;
``shrinking`` makes a failure small; this module is the search (the package,
``scenarios.explore``, the public surface of them all).

Rules:
1. Run ``k`` of a search with seed ``S`` plays ``draw(S * 1_000_003 + k)``: a search is a pure
   function of its seed and options, whatever ``--jobs`` says (workers take runs in any order;
   the report lists failures by run).
2. ``--jobs J`` runs J worker processes forked from this one (the same interpreter, import path
   and loaded code as the command), each playing whole batches of runs (``jobs``).
3. The budget covers everything: the search stops drawing at ``SEARCH_SHARE`` of it, so the
   shrink (bounded by what is left) and the writing fit inside.
4. A failure is shrunk, then replayed twice: the two event-log digests must be equal, else the
   failure is reported as a determinism bug of the simulator, with both digests.
5. Each failure (of each property, the lowest run: the same whatever ``--jobs``) is written
   as ``DIR/failure-<run>.yaml``: an ordinary scenario file with its seed and a
   ``property:`` key (``rt_cluster scenario FILE --sim`` checks it), beside
   ``failure-<run>/`` with ``results.json``, ``report.html`` and ``events.json``.
   A ``DIR`` that already holds a ``failure-*`` (an earlier search's) is refused before
   anything runs, unless ``overwrite``: a second search never replaces the first's files
   without a word.
6. Exit status: 0 nothing violated, 1 a violation (files written), 2 bad usage.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from swim import SwimConfig

from ..judge.properties import BUILT_IN, Property, Run, load_property
from ..reporting.results import error_results, results_of, write_outputs
from .drawing import FAULT_KINDS, Options, draw, run_seed
from .jobs import batches, open_jobs
from .playing import Outcome, digest, play, scenario_of
from .shrinking import Shrunk, shrink
from .storagedraw import draw_any

__all__ = [
    "BUILT_IN",
    "FAULT_KINDS",
    "Options",
    "Outcome",
    "Property",
    "Run",
    "Search",
    "Shrunk",
    "digest",
    "draw",
    "load_property",
    "play",
    "run_search",
    "shrink",
]

SEARCH_SHARE = 0.7  # rule 3


@dataclass
class Search:
    """What ``rt_cluster explore`` was asked for."""

    options: Options = field(default_factory=Options)
    budget_s: float | None = 60.0
    runs: int | None = None
    seed: int = 0
    jobs: int = 1
    out: Path = Path("explore-out")
    properties: list[str] = field(default_factory=lambda: list(BUILT_IN))
    overwrite: bool = False  # rule 5: write over an earlier search's failures
    first_only: bool = False  # stop drawing at the first failure (benchmarks time the find)

    def run_seed(self, k: int) -> int:
        return run_seed(self.seed, k)


def run_search(search: Search, say: Any = print) -> int:
    """The search, its shrinks and files; the exit status (rule 6)."""
    for p in search.properties:
        load_property(p)  # ValueError: bad usage, before anything runs
    for end in (0, 1):  # ValueError names an unknown setting or a bad end of a range
        SwimConfig.from_mapping({key: span[end] for key, span in search.options.swim.items()})
    earlier = sorted(search.out.glob("failure-*")) if search.out.is_dir() else []
    if earlier and not search.overwrite:  # rule 5, before anything runs
        raise ValueError(
            f"--out {search.out} holds an earlier search's failures ({earlier[0].name}): "
            "give another --out, or --overwrite to write over them"
        )
    started = time.monotonic()
    stop_at = None if search.budget_s is None else started + search.budget_s * SEARCH_SHARE
    search.out.mkdir(parents=True, exist_ok=True)
    failures: dict[str, tuple[int, dict[str, Any], tuple[str, str]]] = {}
    sizes: Counter[int] = Counter()
    kinds: Counter[str] = Counter()
    done, virtual, last_line = 0, 0.0, 0.0
    work = batches(
        search.seed,
        search.options,
        search.properties,
        runs=search.runs,
        jobs=search.jobs,
        stop_at=stop_at,
    )
    with open_jobs(work, search.jobs) as played:
        for batch in played:
            now = time.monotonic()
            for run in batch:
                done += 1
                virtual += run.virtual_s
                sizes[run.nodes] += 1
                kinds.update(run.kinds)
                failed = run.failed
                if failed is not None and (
                    failed[0] not in failures or run.k < failures[failed[0]][0]
                ):
                    mapping = draw_any(search.run_seed(run.k), search.options)  # jobs rule 2
                    failures[failed[0]] = (run.k, mapping, failed)
                    say(f"run {run.k}: {failed[0]} violated (+{now - started:.1f} s): {failed[1]}")
            if now - last_line >= 1.0:
                last_line = now
                wall = max(now - started, 1e-9)
                say(
                    f"runs {done}, {done / wall:.1f}/s, {virtual / wall:.0f} virtual s per wall s, "
                    f"failures {len(failures)}",
                )
            if (stop_at is not None and now >= stop_at) or (search.first_only and failures):
                break
    wall = max(time.monotonic() - started, 1e-9)
    rate = f"{done / wall:.1f}/s, {virtual / wall:.0f}x real time"
    say(f"searched {done} runs in {wall:.1f} s ({rate})")
    say("drawn: sizes " + ", ".join(f"{n} nodes x{c}" for n, c in sorted(sizes.items())))
    by_count = sorted(kinds.items(), key=lambda kc: (-kc[1], kc[0]))  # ties: by name, not by
    say("drawn: steps " + ", ".join(f"{k} x{c}" for k, c in by_count))  # which job ended first
    status = 0
    for name, (k, mapping, _) in sorted(failures.items(), key=lambda x: x[1][0]):
        status = 1
        _report(search, name, k, mapping, started, say)
    if not failures:
        say("no property violated")
    return status


def _report(
    search: Search, name: str, k: int, mapping: dict[str, Any], started: float, say: Any
) -> None:
    """Rules 4 and 5 for one failure."""
    first = play(mapping, [name])
    if first.failed is None:  # not even the same run fails again: the simulator is not pure
        say(f"run {k}: {name} did not fail on a replay: a determinism bug of the simulator")
        return
    end = None if search.budget_s is None else started + search.budget_s * 0.95
    small = shrink(mapping, first, [name], end if end is not None else float("inf"))
    a, b = play(small.mapping, [name]), play(small.mapping, [name])
    path = search.out / f"failure-{k}.yaml"
    if a.digest != b.digest or a.failed is None or b.failed is None:
        say(
            f"run {k}: a determinism bug of the simulator: two replays of the shrunk schedule "
            f"differ (digests {a.digest[:16]} and {b.digest[:16]})"
        )
    data = {**small.mapping, "name": f"explore failure {k}: {name}", "property": name}
    data["description"] = (
        f"found by rt_cluster explore --seed {search.seed} (run {k}); {name} violated: "
        f"{(a.failed or first.failed)[1]}"
    )
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    outdir = search.out / f"failure-{k}"
    outdir.mkdir(parents=True, exist_ok=True)
    scenario = scenario_of(data, str(path))
    if a.run.trace is not None:
        results = results_of(scenario, a.run.trace, "sim", int(data["seed"]))
        (outdir / "events.json").write_text(json.dumps(a.run.trace.events))
    else:  # a machine raised: no trace, the error is the finding (no_exception)
        results = error_results(scenario, str(path), "sim", int(data["seed"]), a.run.error)
        results.update(verdict="fail", property={"name": name, "status": "fail"})
        results["property"]["detail"] = a.run.error
    write_outputs(outdir, results, a.run.trace)
    minimal = "1-minimal" if small.minimal else "not minimal (the budget ran out)"
    say(
        f"failure-{k}: {name}, {len(small.mapping['steps'])} steps, {small.mapping['nodes']} "
        f"nodes, {minimal} after {small.tries} tries in {small.seconds:.1f} s; events digest "
        f"{a.digest[:16]}\n  wrote {path} (replay: rt_cluster scenario {path} --sim)"
    )
