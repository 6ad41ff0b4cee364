"""``python -m fuzz``: run fuzz targets, print one line each, exit 1 if any found a defect.

    python -m fuzz all --seconds 600            what ``make fuzz`` runs
    python -m fuzz wire state --seconds 30 --jobs 2
    python -m fuzz list                         the targets and their parsers

Exit status: 0 when every run ended ``ok``; 1 when one found a defect (its input is kept, the
line names it) or did not run; 2 for a bad command line. ``--summary FILE`` also writes the
outcomes as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from pathlib import Path

from . import CRASHES, TARGETS, WORK
from .runner import Limits, run_many


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="+", metavar="NAME", help="targets, 'all', or 'list'")
    p.add_argument("--seconds", type=int, default=60, help="run time per target (default 60)")
    p.add_argument("--jobs", type=int, default=1, help="targets run at once (default 1)")
    p.add_argument("--timeout", type=int, default=10, help="seconds one input may take")
    p.add_argument("--rss-mb", type=int, default=1536, help="memory of one engine (MiB)")
    p.add_argument("--work", type=Path, default=WORK, help="work corpora and logs")
    p.add_argument("--crashes", type=Path, default=CRASHES, help="where defects' inputs go")
    p.add_argument("--summary", type=Path, help="also write the outcomes as JSON here")
    return p


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.names == ["list"]:
        for t in TARGETS.values():
            print(f"{t.name:<11} {t.parser}")
        return 0
    names = list(TARGETS) if args.names == ["all"] else args.names
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(
            f"python -m fuzz: no target {unknown[0]!r} (known: {', '.join(TARGETS)})",
            file=sys.stderr,
        )
        return 2
    if min(args.seconds, args.jobs, args.timeout, args.rss_mb) < 1:
        print(
            "python -m fuzz: --seconds, --jobs, --timeout and --rss-mb are at least 1",
            file=sys.stderr,
        )
        return 2
    limits = Limits(seconds=args.seconds, input_timeout=args.timeout, rss_mb=args.rss_mb)
    outcomes = run_many(
        [TARGETS[n] for n in names],
        limits,
        jobs=args.jobs,
        work_root=args.work.resolve(),
        crash_root=args.crashes.resolve(),
    )
    for o in outcomes:
        print(o.line())
    if args.summary is not None:
        rows = [
            {**asdict(o), "saved": list(map(str, o.saved)), "log": str(o.log)} for o in outcomes
        ]
        args.summary.write_text(json.dumps(rows, indent=1) + "\n")
    return 0 if all(o.ok for o in outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
