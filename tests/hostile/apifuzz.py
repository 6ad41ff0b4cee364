"""API fuzzing: schemathesis against the ``/openapi.json`` of a live 2-node cluster. The CI test
(``test_schemathesis.py``) and the long run (``make fuzz-api``) share it.

Rules:
1. The cluster is ``cluster.start_cluster``'s (node 0 and node 1 with known pools and blobs),
   so per-node routes forward to node 1 and pool routes meet real pools; schemathesis runs as
   a process of the tests' harness (ended whatever happens), with ``schemathesis.toml`` next
   to this file and the checks, example count, seed and reports on its command line.
2. Every operation of the document is tested, in every phase (examples, coverage, fuzzing,
   stateful along the document's links: compose or create a pool, then query it and act on
   it). None is left out: no route of the document stops a node (``rt_run stop`` is RPC only;
   the retired shutdown stubs are not in the document) and destroying the admin pool is a 403.
   ``POST /api/pools/{pool}/destroy`` runs last, in a run of its own (``PASSES``): its examples
   are the node's pools, and destroying them first would leave the pool routes nothing but 404.
3. The CI run is derandomized (``--generation-deterministic``): the same cases every time, so
   a failure reproduces. The long run takes a seed, printed and saved, and more examples.
4. The outcome: schemathesis's exit status, the operations its JUnit report names, each
   failure's text, and the nodes afterwards (``node_problems``): running, health within 1 s,
   no 5xx counted by ``/metrics``, no traceback in a log.

Long run: ``python -m tests.hostile.apifuzz --examples 300 [--seed N] [--out DIR]`` (reports
and a summary under ``bench/results/apifuzz/``).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from tests.support import Harness, open_harness

from .cluster import Cluster, counters, start_cluster

__all__ = ["CI_CHECKS", "LONG_CHECKS", "FuzzRun", "node_problems", "run_schemathesis"]

HERE = Path(__file__).resolve().parent
CONFIG = HERE / "schemathesis.toml"
RESULTS = HERE.parents[1] / "bench" / "results" / "apifuzz"
CI_CHECKS = (
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_schema_conformance",
    "unsupported_method",  # a method a route lacks: 405 ...
    "allow_header_conformance",  # ... with the Allow header
)
LONG_CHECKS = (
    *CI_CHECKS,
    "response_headers_conformance",
    "negative_data_rejection",
    "use_after_free",
    "ensure_resource_availability",
)
STATEFUL = "Stateful tests"  # the JUnit test case of the stateful phase
DESTROY = "/destroy$"
PASSES = (  # (name, the operations it selects): rule 2
    ("main", ("--exclude-path-regex", DESTROY)),
    # alone, destroy has no links to follow: no stateful phase (schemathesis counts none an error)
    ("destroy", ("--include-path-regex", DESTROY, "--phases", "examples,coverage,fuzzing")),
)
HEALTH_LIMIT = 1.0  # seconds


@dataclass
class FuzzRun:
    """What one schemathesis run found (rule 4)."""

    exit_status: int | None
    operations: list[str]  # "GET /api/health", as the JUnit report names them
    failures: dict[str, list[str]] = field(default_factory=dict)  # operation -> texts
    seconds: float = 0.0
    log: str = ""  # the tool's console output


def command(
    url: str,
    report_dir: Path,
    examples: int,
    *,
    seed: int | None = None,
    checks: Sequence[str] = CI_CHECKS,
    select: Sequence[str] = (),
    reports: Sequence[str] = ("junit",),
) -> list[str]:
    """The schemathesis command line (rules 1 and 3); ``select`` filters operations."""
    argv = [sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG), "run"]
    argv += [f"{url}/openapi.json", "--checks", ",".join(checks)]
    argv += ["--max-examples", str(examples), "--report", ",".join(reports)]
    argv += ["--report-dir", str(report_dir), "--report-junit-path", str(report_dir / "junit.xml")]
    if "ndjson" in reports:  # every event of the run: tens of MB for a long one
        argv += ["--report-ndjson-path", str(report_dir / "events.ndjson")]
    argv += ["--generation-deterministic"] if seed is None else ["--seed", str(seed)]
    return [*argv, *select]


def read_junit(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """The operations a JUnit report names and the failure texts of each."""
    operations, failures = [], {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name", "")
        if name != STATEFUL:
            operations.append(name)
        texts = [
            (e.get("message") or "") + "\n" + (e.text or "")
            for e in case
            if e.tag in ("failure", "error")
        ]
        if texts:
            failures[name] = texts
    return operations, failures


def run_pass(
    harness: Harness,
    url: str,
    report_dir: Path,
    examples: int,
    timeout: float,
    *,
    seed: int | None = None,
    checks: Sequence[str] = CI_CHECKS,
    select: Sequence[str] = (),
    reports: Sequence[str] = ("junit",),
) -> FuzzRun:
    """Run schemathesis once against the node at ``url`` until it exits (at most ``timeout``
    seconds), its reports in ``report_dir``."""
    report_dir.mkdir(parents=True, exist_ok=True)
    argv = command(url, report_dir, examples, seed=seed, checks=checks, select=select,
                   reports=reports)  # fmt: skip
    started = time.monotonic()
    child = harness.start(argv, f"schemathesis-{report_dir.name}")
    status = harness.wait_exit(child, timeout)
    seconds = time.monotonic() - started
    log = harness.log_text(child)
    junit = report_dir / "junit.xml"
    if not junit.exists():
        return FuzzRun(status, [], {"(no report)": [log[-4000:]]}, seconds, log)
    operations, failures = read_junit(junit)
    return FuzzRun(status, operations, failures, seconds, log)


def run_schemathesis(
    harness: Harness,
    url: str,
    report_dir: Path,
    examples: int,
    timeout: float,
    *,
    seed: int | None = None,
    checks: Sequence[str] = CI_CHECKS,
    reports: Sequence[str] = ("junit",),
) -> FuzzRun:
    """Every pass of ``PASSES`` in turn (rule 2), each under ``report_dir/<pass>``; one
    ``FuzzRun`` of them all (the worst exit status, every operation and failure)."""
    total = FuzzRun(0, [])
    deadline = time.monotonic() + timeout
    for name, select in PASSES:
        left = max(1.0, deadline - time.monotonic())
        run = run_pass(harness, url, report_dir / name, examples, left,
                       seed=seed, checks=checks, select=select, reports=reports)  # fmt: skip
        if run.exit_status != 0:
            total.exit_status = run.exit_status
        total.operations += run.operations
        total.failures.update(run.failures)
        total.seconds += run.seconds
        total.log += f"==== pass {name} ====\n{run.log}"
    return total


def node_problems(cluster: Cluster) -> list[str]:
    """Rule 4's checks of the nodes after a run; the problems found (empty: fine)."""
    problems = []
    for i, node in enumerate(cluster.nodes):
        if cluster.harness.state(node) != "running":
            problems.append(f"node {i} is {cluster.harness.state(node)}")
            continue
        url = cluster.urls[i]
        best = min(_health_seconds(url) for _ in range(3))
        if best >= HEALTH_LIMIT:
            problems.append(f"node {i}: /api/health took {best:.2f} s")
        errors = {k: v for k, v in counters(url).items() if re.fullmatch(r"http_status_5\d\d", k)}
        if errors:
            problems.append(f"node {i} answered 5xx (/metrics): {errors}")
        if "Traceback (most recent call last)" in cluster.harness.log_text(node):
            problems.append(f"node {i} logged a traceback (see {node.log})")
    return problems


def answers(url: str) -> dict[str, dict[str, int]]:
    """What the node at ``url`` answered, from its ``/metrics``: ``"METHOD route"`` -> status
    -> count (how deep the run reached: a route that only ever answered 4xx was not)."""
    out: dict[str, dict[str, int]] = {}
    text = httpx.get(url + "/metrics", timeout=10).text
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name == "rt_http_requests_total":
                key = f"{sample.labels['method']} {sample.labels['route']}"
                out.setdefault(key, {})[sample.labels["status"]] = int(sample.value)
    return dict(sorted(out.items()))


def _health_seconds(url: str) -> float:
    t0 = time.monotonic()
    try:
        ok = httpx.get(url + "/api/health", timeout=10).status_code == 200
    except httpx.HTTPError:
        ok = False
    return time.monotonic() - t0 if ok else float("inf")


def main(args: Sequence[str] | None = None) -> int:
    """The long run (rule 3): a fresh cluster, every check of ``LONG_CHECKS``, a summary."""
    p = argparse.ArgumentParser(prog="python -m tests.hostile.apifuzz", description=__doc__)
    p.add_argument("--examples", type=int, default=300, help="cases per operation and phase")
    p.add_argument("--seed", type=int, default=None, help="default: drawn and printed")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds for the whole run")
    p.add_argument("--out", type=Path, default=RESULTS, help="reports and summary.json")
    opts = p.parse_args(args)
    seed = opts.seed if opts.seed is not None else random.SystemRandom().randrange(1 << 32)
    with tempfile.TemporaryDirectory(prefix="apifuzz-") as tmp, open_harness(Path(tmp)) as h:
        cluster = start_cluster(h)
        print(f"cluster up: {cluster.urls}; schemathesis seed {seed}, {opts.examples} examples")
        run = run_schemathesis(h, cluster.urls[0], opts.out, opts.examples, opts.timeout,
                               seed=seed, checks=LONG_CHECKS)  # fmt: skip
        problems = node_problems(cluster)
        answered = answers(cluster.urls[0])
    summary = {"seed": seed, "examples": opts.examples, "checks": list(LONG_CHECKS),
               **asdict(run), "node_problems": problems, "answers": answered}  # fmt: skip
    summary.pop("log")
    (opts.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    (opts.out / "schemathesis.log").write_text(run.log)
    print(run.log[-3000:])
    print(
        f"{len(run.operations)} operations, {len(run.failures)} with failures, "
        f"{run.seconds:.0f} s; node problems: {problems or 'none'}; written to {opts.out}"
    )
    return 0 if run.exit_status == 0 and not run.failures and not problems else 1


if __name__ == "__main__":
    sys.exit(main())
