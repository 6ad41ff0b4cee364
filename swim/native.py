"""The machine and the simulated network compiled with mypyc, used when a build of exactly
today's sources is at hand: the same code, the same history, about twice as fast.

Rules:
1. ``COMPILED`` names the modules built: the per-event path of the machine and of the
   simulated network, which handle only records already checked. The doors that read bytes
   from outside (``wire``, ``exchange``, ``memberlist``) stay Python, where the fuzz targets
   see their coverage and a bad field raises what the code says (a compiled module checks
   each annotated type itself). So do those that run trio tasks (``driver``, ``timer``,
   ``sockets``, ``rtsimdoor``), the settings (``config``) and what costs nothing per event.
   A compiled class cannot be patched: the planted bugs of ``bench/explore`` (which patch
   ``membership`` and ``lifeguard``) need swim as Python (``RTSIM_PURE=1``; tests marked
   ``python_swim`` run in a child pytest so).
2. ``make`` builds them (``swim.native.build()``) into ``build/native/swim/`` beside a
   ``SOURCES`` stamp: the SHA-256 of every source file of ``swim``, written last, so a build
   that failed half-way has no stamp.
3. ``import swim`` puts that folder first on the package's path only when the stamp matches
   today's sources and ``RTSIM_PURE`` is not set (``IN_USE`` says which); any edit in
   ``swim/`` therefore runs as Python until the next build, never as stale machine code.
   Either way the same seed gives the same history (``tests/swim/test_native.py``).
4. A record made on every event writes its own ``__init__`` (``dataclass(init=False)``; a
   frozen one sets its fields with ``object.__setattr__``, as the generated one does): the
   generated ``__init__`` is Python even in a compiled module, about 240 ns a record against
   36. The dataclass still gives the rest (equality, hashing, ``repr``, ``fields``).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from collections.abc import MutableSequence
from pathlib import Path

__all__ = ["BUILD", "COMPILED", "IN_USE", "build", "stamp", "use_build"]

COMPILED = (
    "broadcast",
    "buddies",
    "corrections",
    "faults",
    "intake",
    "lifeguard",
    "machine",
    "members",
    "membership",
    "messages",
    "newcomers",
    "outbox",
    "outputs",
    "probes",
    "relays",
    "resync",
    "simclock",
    "simcpu",
    "simlink",
    "simnet",
    "simnodes",
    "simsync",
    "sizes",
    "table",
)
SOURCE = Path(__file__).resolve().parent
BUILD = SOURCE.parent / "build" / "native" / "swim"
GROUP = "swim.native_group"  # the shared library: swim/native_group__mypyc.*.so in BUILD


def stamp(source: Path = SOURCE) -> str:
    """One line per source file of the package: its SHA-256 and its path (rule 2)."""
    lines = [
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(source).as_posix()}"
        for p in sorted(source.rglob("*.py"))
    ]
    return "\n".join(lines) + "\n"


def use_build(path: MutableSequence[str], build: Path = BUILD, source: Path = SOURCE) -> bool:
    """Rule 3: put ``build`` first on ``path`` (the package's ``__path__``) when its stamp
    matches ``source`` and ``RTSIM_PURE`` is unset; whether it did."""
    if os.environ.get("RTSIM_PURE"):
        return False
    try:
        built = (build / "SOURCES").read_text()
    except OSError:
        return False
    if built != stamp(source):
        return False
    path.insert(0, str(build))
    return True


def build() -> None:
    """Rule 2: compile ``COMPILED`` into ``BUILD`` (several tens of seconds of gcc)."""
    from mypyc.build import mypycify  # the build's tools, not the runtime's
    from setuptools import Distribution  # type: ignore[import-untyped]

    sources = stamp()
    root, temp = SOURCE.parent, BUILD.parent.parent / "native-temp"
    shutil.rmtree(BUILD, ignore_errors=True)
    os.chdir(root)  # mypyc names the modules by their paths from here: swim.machine, ...
    extensions = mypycify(
        [f"swim/{name}.py" for name in COMPILED],
        opt_level="3",
        group_name=GROUP,
        target_dir=str(temp / "c"),
    )
    dist = Distribution({"ext_modules": extensions})
    command = dist.get_command_obj("build_ext")
    command.build_lib = str(BUILD.parent)  # type: ignore[attr-defined]
    command.build_temp = str(temp / "o")  # type: ignore[attr-defined]
    command.parallel = os.cpu_count() or 1  # type: ignore[attr-defined]
    dist.run_command("build_ext")
    (BUILD / "SOURCES").write_text(sources)
    print(f"swim.native: {len(COMPILED)} modules compiled into {BUILD}", file=sys.stderr)


IN_USE = use_build(sys.modules[__package__].__path__)  # rule 3, as ``import swim`` begins
