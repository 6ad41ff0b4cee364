"""How a search's runs are handed out to its jobs: in batches of consecutive runs.

Rules:
1. Every run of a search is in exactly one batch, and the batches come in the order of their
   runs (``batches``). With a count of runs, a batch holds at most a quarter of a job's share
   of the runs left, so batches shrink to one run towards the end and no job idles long while
   another plays the last of them.
2. A job plays a whole batch in one trio loop (``playing.play_batch``) and sends back, per
   run, only what the search counts (``Played``): its number, size, step kinds, the property
   it violated and its virtual seconds. A violation's schedule is drawn again where it is
   reported (``draw`` is a pure function of the run's seed).
3. ``--jobs J`` above one forks J worker processes from this one (the same interpreter, import
   path and loaded code as the command); each asks for the next batch when it has sent its
   last one, so the jobs stay busy whatever their batches cost. One job plays its batches in
   this process.
4. A job starts no run past the search's ``stop_at`` (``time.monotonic``, one clock for every
   process of the host): a batch is cut short there, so the budget is kept to within a run.
"""

from __future__ import annotations

import multiprocessing
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .drawing import Options, run_seed
from .playing import play_batch
from .storagedraw import draw_any

__all__ = ["BATCH", "Batch", "Played", "batches", "kinds", "open_jobs", "play_runs"]

BATCH = 8  # runs a batch holds at most (rule 1): a fraction of a second of one job's time


@dataclass(frozen=True, slots=True)
class Batch:
    """Runs ``first .. first + count - 1`` of the search with ``seed`` (rule 1), what they
    draw from and are judged by, and the moment past which no run starts (rule 4)."""

    seed: int
    options: Options
    properties: tuple[str, ...]
    first: int
    count: int
    stop_at: float | None

    @property
    def runs(self) -> range:
        return range(self.first, self.first + self.count)


@dataclass(frozen=True, slots=True)
class Played:
    """What a job sends back of one run (rule 2)."""

    k: int
    nodes: int
    kinds: tuple[str, ...]
    failed: tuple[str, str] | None
    virtual_s: float


def batches(
    seed: int,
    options: Options,
    properties: list[str],
    *,
    runs: int | None,
    jobs: int,
    stop_at: float | None = None,
) -> Iterator[Batch]:
    """The runs of a search as consecutive batches, each run in exactly one (rule 1)."""
    first = 0
    while runs is None or first < runs:
        count = BATCH if runs is None else max(1, min(BATCH, (runs - first) // (4 * max(1, jobs))))
        yield Batch(seed, options, tuple(properties), first, count, stop_at)
        first += count


def kinds(mapping: dict[str, Any]) -> tuple[str, ...]:
    """The kind of each step of a drawn schedule (``final heal`` for its last)."""
    out = []
    for s in mapping["steps"]:
        kind = next(k for k in s if k not in ("at", "name", "for"))
        out.append("final heal" if s.get("name") == "final" else kind)
    return tuple(out)


def play_runs(batch: Batch) -> list[Played]:
    """One batch, played and judged in one trio loop (rules 2 and 4)."""
    mappings = [draw_any(run_seed(batch.seed, k), batch.options) for k in batch.runs]
    outcomes = play_batch(mappings, list(batch.properties), until=batch.stop_at)
    return [
        Played(k, int(m["nodes"]), kinds(m), got.failed, got.virtual_s)
        for k, m, got in zip(batch.runs, mappings, outcomes, strict=False)
    ]


@contextmanager
def open_jobs(work: Iterator[Batch], jobs: int) -> Iterator[Iterator[list[Played]]]:
    """The batches of ``work`` played by ``jobs`` jobs, each batch's runs as it is done
    (rule 3); the worker processes end when the block does, however it ends."""
    if jobs <= 1:
        yield map(play_runs, work)
        return
    pool = multiprocessing.get_context("fork").Pool(jobs)
    try:
        yield pool.imap_unordered(play_runs, work, chunksize=1)
    finally:
        pool.terminate()
        pool.join()
