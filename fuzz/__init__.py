"""fuzz: coverage-guided fuzzing (atheris, libFuzzer) of every parser that takes bytes from
outside a node.

    python -m fuzz all --seconds 10        every target for 10 s (CI runs a short pass)
    python -m fuzz wire settings           some targets, for the default time
    make fuzz                              every target for 10 minutes

Layout:

    fuzz/targets/<name>.py   one target per parser: ``test_one_input(data: bytes) -> bool``
                             feeds the parser, lets only its documented error pass, and says
                             whether the parser took the input; ``custom_mutator`` if it has one
    fuzz/corpus/<name>/      the seed corpus, in git: ``ok-*`` inputs the parser accepts (made
                             by the project's own encoders, ``python -m fuzz.seeds``), ``edge-*``
                             inputs it must refuse cleanly
    fuzz/crashes/<name>/     inputs that once crashed a target, kept after the fix: every one
                             is replayed by tests/fuzz as a regression test
    fuzz/work/<name>/        the corpus a run grows (not in git)
    fuzz/dicts/<name>.dict   libFuzzer dictionaries: the formats' keys and words (fuzz.seeds)
    fuzz/defects.md          what the fuzzers found, and how each was fixed

Modules: ``engine`` (one target under atheris, in its own process), ``runner`` (the processes,
their limits and outcomes), ``mutators`` (structure-aware mutations of YAML and msgpack),
``seeds`` (the corpora and dictionaries; ``memberlist_seeds`` those of the memberlist targets),
``replay`` (inputs through targets in-process).

Rules:
1. Neither this ``__init__`` nor ``fuzz.targets``' imports a project module: the engine
   (``fuzz.engine``, run in a subprocess per target) imports a target inside
   ``atheris.instrument_imports`` for the packages named in ``TARGETS``, and a module imported
   before that would not be instrumented.
2. A target raises nothing for any input except a defect: an exception other than the parser's
   one error type, or a broken promise the parser's docstring makes (a round trip, a bound).
   Time (``-timeout``) and memory (``-rss_limit_mb``) past the runner's limits are defects too.
3. The runner (``fuzz.runner``) starts one engine process per target, bounds its wall time,
   and keeps the input of every crash, timeout or out-of-memory under the crashes directory.
4. Targets are plain Python (atheris is imported only by the engine and, lazily, by the
   mutators): the tests replay every corpus file and every kept crash through them in-process
   (``fuzz.replay``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["CORPUS", "CRASHES", "HERE", "TARGETS", "WORK", "Target"]

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
CRASHES = HERE / "crashes"
WORK = HERE / "work"


@dataclass(frozen=True, slots=True)
class Target:
    """One fuzz target: the parser it feeds, the packages atheris instruments for it (their
    coverage guides the fuzzer), the largest input libFuzzer makes for it (bytes), and the
    module that defines ``test_one_input`` (``fuzz.targets.<name>`` unless given)."""

    name: str
    parser: str
    instrument: tuple[str, ...]
    max_len: int = 4096
    module: str = ""

    def __post_init__(self) -> None:
        if not self.module:
            object.__setattr__(self, "module", f"fuzz.targets.{self.name}")


TARGETS: dict[str, Target] = {
    t.name: t
    for t in (
        Target("wire", "swim.wire.decode_untrusted: one UDP packet", ("swim",)),
        Target("machine", "swim.RtsimDoor.receive: UDP packets, plain or sealed", ("swim",)),
        Target("state", "push/pull state frames, both sides (swim.exchange)", ("swim", "cluster")),
        Target("rpc_frame", "cluster.rpc.frames: request and reply frames", ("cluster",)),
        Target("rpc_stream", "cluster.node.rpc: bytes on a server connection", ("cluster",), 8192),
        Target(
            "block_call", "cluster.modules.remote.serve_block: a peer's block call", ("cluster",)
        ),
        Target(
            "settings", "cluster.ground.settings.parse_settings_text", ("cluster", "swim"), 8192
        ),
        Target("safeyaml", "cluster.ground.safeyaml.load_marked", ("cluster", "yaml"), 8192),
        Target("scenario", "scenarios.parse_scenario (real and sim)", ("scenarios", "swim"), 8192),
        Target("hostfile", "cluster.hosts.hostfile.parse_hostfile_text", ("cluster",)),
        Target("query", "dashboard.params.parse_pairs: a query string", ("dashboard",)),
        Target("numbers", "cluster.ground.parse: ids, ports, sizes, rates, booleans", ("cluster",)),
        Target("keyring", "swim.keyring.load_keyring: a keyring file", ("swim",)),
        Target("memberlist", "swim.memberlist.codec.decode_packet: one UDP packet", ("swim",)),
        Target(
            "memberlist_stream",
            "swim.memberlist.stream: a push/pull or ping stream",
            ("swim",),
            8192,
        ),
    )
}
