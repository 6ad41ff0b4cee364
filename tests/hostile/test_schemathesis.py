"""schemathesis in CI: every operation of a live node's ``/openapi.json`` fuzzed on a real
2-node cluster (``apifuzz``: the cluster, the checks, what is read back).

The run is derandomized and bounded (``EXAMPLES`` cases per operation and phase, well under
two minutes on two cores); ``make fuzz-api`` is the long run. Zero failures of any check is
the bar: no 5xx, every status, content type and body as the document says, 405 with
``Allow`` for a method a route lacks. The reports stay in ``tests/artifacts/schemathesis/``.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import httpx
import pytest

from .apifuzz import node_problems, run_schemathesis
from .cluster import Cluster

pytestmark = pytest.mark.slow

REPORTS = Path(__file__).resolve().parents[1] / "artifacts" / "schemathesis"
EXAMPLES = 25  # cases per operation in each generating phase
TIMEOUT = 150.0  # seconds for the whole schemathesis run (about 30 s here)
# schemathesis never calls the URL it read the document from; test_openapi.py checks it.
OWN_DOCUMENT = "GET /openapi.json"


def _operations(url: str) -> set[str]:
    document = httpx.get(url + "/openapi.json", timeout=10).json()
    return {f"{m.upper()} {path}" for path, item in document["paths"].items() for m in item}


def _report(run_failures: dict[str, list[str]], limit: int = 6) -> str:
    lines = []
    for op, texts in sorted(run_failures.items())[:limit]:
        lines.append(f"{op}: {len(texts)} failure(s); the first:\n{texts[0][:1500]}")
    return "\n\n".join(lines)


def test_every_operation_fuzzed_without_errors_or_violations(cluster: Cluster) -> None:
    url = cluster.urls[0]
    operations = _operations(url)
    shutil.rmtree(REPORTS, ignore_errors=True)
    run = run_schemathesis(
        cluster.harness, url, REPORTS, EXAMPLES, TIMEOUT, reports=("junit", "ndjson")
    )
    (REPORTS / "schemathesis.log").write_text(run.log)
    assert not run.failures, _report(run.failures)
    assert run.exit_status == 0, run.log[-3000:]
    untested = operations - set(run.operations) - {OWN_DOCUMENT}
    assert not untested, f"operations schemathesis did not test: {sorted(untested)}"
    assert not set(run.operations) - operations, "schemathesis tested operations not documented"
    assert node_problems(cluster) == []
