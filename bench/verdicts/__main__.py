"""``python -m bench.verdicts passrates|calibrate [options]``: see ``passrates`` and
``calibrate`` for what each measures; both print a table and save JSON under bench/results/."""

from __future__ import annotations

import argparse
import signal
import sys

from . import calibrate, passrates


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.verdicts", description=__doc__)
    sub = ap.add_subparsers(dest="command", required=True)
    for name, module, summary in (
        (
            "passrates",
            passrates,
            "pass rates: held-out sim seeds, real runs beside a loaded cluster",
        ),
        ("calibrate", calibrate, "simulated against real latency distributions, N=5 and 20"),
    ):
        p = sub.add_parser(
            name,
            help=summary,
            description=module.__doc__,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        module.add_arguments(p)
        p.set_defaults(run=module.run)
    args = ap.parse_args(argv)
    # SIGTERM unwinds like an error, so every cluster started is ended in its finally.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    return int(args.run(args))


if __name__ == "__main__":
    sys.exit(main())
