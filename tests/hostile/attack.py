"""Sending a class of hostile input and judging it: HTTP probes with their verdicts, health
sampled while an attack holds, and the end of every class (the cluster's check, the verdict).

Rules:
1. An HTTP answer fails when there is none (timeout, closed, reset), when it is a 5xx other
   than 501 (a transfer coding the server does not implement, RFC 9112) or 503, when a 4xx
   or 5xx lacks the ``{"error": ...}`` JSON body, or when a request that must be refused is
   answered 2xx/3xx.
2. Health during an attack: every ``interval`` seconds each node's ``/api/health`` is asked on
   a fresh connection, up to ``HEALTH_TRIES`` times until one answer comes within 1 s; a
   sample with no such answer is a failure (a node whose slots the attack holds fails every
   try, a chance stall on two busy cores does not fail all of them).
3. ``finish`` runs the cluster's check after the class, records its problems in the class's
   tally, and fails the test with every failure of the class, grouped.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import trio

from .cluster import HEALTH_LIMIT, Cluster, check_intact
from .http_inputs import Probe
from .rawhttp import Answer, exchange, request_bytes
from .tally import ClassTally

__all__ = [
    "CONCURRENCY",
    "REQUEST_TIMEOUT",
    "finish",
    "fire",
    "judge",
    "record_intact",
    "sample_health",
    "verdict",
]

CONCURRENCY = 12  # hostile requests in flight at once (the dashboard has 16 slots)
REQUEST_TIMEOUT = 10.0  # seconds for one answer (the forward bound is 5 s)
HEALTH_TRIES = 3
HEALTH_TRY_TIMEOUT = 3.0  # seconds; a try slower than the limit has failed anyway


def judge(probe: Probe, answer: Answer) -> str | None:
    """What is wrong with ``answer`` to ``probe`` (rule 1), None if nothing."""
    if answer.status is None:
        return f"no answer ({answer.outcome} after {answer.seconds:.1f} s)"
    status = answer.status
    layer = " (empty body: hypercorn's own answer)" if not answer.body else ""
    if status >= 500 and status not in (501, 503):  # 501: a framing the server does not do
        return f"answered {status}{layer}"
    if status >= 400 and not answer.has_error_body:  # 501 and 503 included
        return f'answered {status} without an {{"error": ...}} JSON body{layer}'
    if status < 400 and probe.refuse:
        return f"accepted ({status}) what it must refuse"
    return None


async def fire(
    cluster: Cluster, probes: Iterable[Probe], ct: ClassTally, *, concurrency: int = CONCURRENCY
) -> list[tuple[Probe, Answer]]:
    """Send every probe (``concurrency`` at a time) to its node's dashboard; record each in
    ``ct``; the answers."""
    limiter = trio.CapacityLimiter(concurrency)
    answers: list[tuple[Probe, Answer]] = []

    async def one(probe: Probe) -> None:
        async with limiter:
            answer = await exchange(
                cluster.viz_ports[probe.node], probe.request, timeout=REQUEST_TIMEOUT
            )
        answers.append((probe, answer))
        ct.record(answer.label, probe.what, judge(probe, answer))

    async with trio.open_nursery() as nursery:
        for probe in probes:
            nursery.start_soon(one, probe)
    return answers


async def _health_sample(port: int) -> float:
    """The best latency of up to ``HEALTH_TRIES`` health requests (inf: none answered 200)."""
    best = float("inf")
    for _ in range(HEALTH_TRIES):
        t0 = time.monotonic()
        answer = await exchange(
            port, request_bytes("GET", "/api/health"), timeout=HEALTH_TRY_TIMEOUT
        )
        if answer.status == 200:
            best = min(best, time.monotonic() - t0)
        if best < HEALTH_LIMIT:
            break
    return best


async def sample_health(
    cluster: Cluster,
    ct: ClassTally,
    seconds: float,
    interval: float = 0.5,
    until: trio.Event | None = None,
) -> None:
    """Rule 2 for ``seconds`` (or until ``until`` is set, after one sample at least): the
    samples go to ``ct.notes``, a slow sample to the class's failures."""
    deadline = time.monotonic() + seconds
    samples: dict[str, list[float]] = {f"node{i}": [] for i in range(len(cluster.nodes))}
    while time.monotonic() < deadline and not (
        until is not None and until.is_set() and samples["node0"]
    ):
        for i, port in enumerate(cluster.viz_ports):
            best = await _health_sample(port)
            samples[f"node{i}"].append(round(best, 3))
            if best >= HEALTH_LIMIT:
                ct.fail(f"node {i}: /api/health not within 1 s during the attack", f"{best:.2f} s")
        await trio.sleep(interval)  # the sampling interval (rule 2), not a wait
    ct.notes["health_during_attack_s"] = samples


def record_intact(cluster: Cluster, ct: ClassTally, name: str) -> None:
    """Check the cluster after a class; its problems go to the class's failures."""
    for problem in check_intact(cluster, ct):
        ct.fail(f"after the class: {problem}", name)


def verdict(ct: ClassTally, name: str) -> None:
    """Fail the test with every failure of the class, grouped."""
    assert not ct.failed, f"{name}: {ct.failed} failures:\n" + "\n".join(ct.problems())


def finish(cluster: Cluster, ct: ClassTally, name: str) -> None:
    """Rule 3: check the cluster, record and assert."""
    record_intact(cluster, ct, name)
    verdict(ct, name)
