"""One fuzz target under atheris, in a process of its own (``fuzz.runner`` starts it).

    python -m fuzz.engine MODULE PACKAGES [libFuzzer flags and corpus directories...]

``MODULE`` defines ``test_one_input``; ``PACKAGES`` (comma-separated) are instrumented.

Rules:
1. The target module is imported inside ``atheris.instrument_imports`` for the packages its
   ``Target`` names, so their coverage guides the fuzzer (``fuzz`` rule 1: nothing of them is
   imported before). The engine takes a module, not a name: tests run targets of their own.
   swim runs as Python here, never its compiled build (``RTSIM_PURE``, ``swim.native`` rule
   3): atheris sees the coverage of Python code only.
2. Logging is off: the parsers' warnings for refused input would only slow the run.
3. What libFuzzer does on a defect (an exception out of the target, a timeout, memory past the
   limit) is its own: it writes the input under ``-artifact_prefix`` and exits non-zero
   (77, 70, 71); ``fuzz.runner`` reads that.
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

import atheris  # type: ignore[import-untyped]


def main(argv: list[str]) -> None:
    if len(argv) < 3:
        sys.exit("usage: python -m fuzz.engine MODULE PACKAGES [libFuzzer args]")
    logging.disable(logging.CRITICAL)
    os.environ["RTSIM_PURE"] = "1"  # rule 1
    with atheris.instrument_imports(include=[p for p in argv[2].split(",") if p]):
        module = importlib.import_module(argv[1])
    mutator = getattr(module, "custom_mutator", None)  # a structure-aware one (fuzz.mutators)
    extra = {} if mutator is None else {"custom_mutator": mutator}
    atheris.Setup([argv[0], *argv[3:]], module.test_one_input, **extra)
    atheris.Fuzz()


if __name__ == "__main__":
    main(sys.argv)
