"""``rt_cluster explore`` (docs/explore.md): search the fault space on the simulated network
for a property violation nobody scripted, shrink it to a 1-minimal schedule, check it replays,
write it as a scenario file.

``drawing`` draws one run's scenario from its seed; ``playing`` plays (through ``play.sim``,
the one engine) and judges it; ``jobs`` hands the runs out to the search's jobs in batches;
``shrinking`` makes a failure small; ``search`` is the search.
This package is their public surface.
"""

from .search import (
    BUILT_IN,
    FAULT_KINDS,
    SEARCH_SHARE,
    Options,
    Outcome,
    Property,
    Run,
    Search,
    Shrunk,
    digest,
    draw,
    load_property,
    play,
    run_search,
    shrink,
)

__all__ = [
    "BUILT_IN",
    "FAULT_KINDS",
    "SEARCH_SHARE",
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
