"""``/metrics``: Prometheus text from a registry owned by one app (never the global one, so
many apps can live in one process, as in the tests).

Rules:
1. HTTP requests are counted by route pattern (``/api/nodes/{node}/workers``, never the raw
   path, so the label set stays bounded), method and status; forwards are timed by query.
2. Membership, SWIM counters, workers and pools are read from the runtime at scrape time; a
   membership without ``statistics()`` (an embedded single node) just has fewer series.
3. Nothing here can fail a scrape: a value of an unexpected type is skipped.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from cluster.runtime import RuntimeView

__all__ = ["CONTENT_TYPE", "DashboardMetrics"]

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_FORWARD_BUCKETS = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
_SWIM_COUNTERS = (
    "probes",
    "probe_failures",
    "suspicions",
    "refutations",
    "pushpulls",
    "refused_incarnation",
    "refused_new_member",
    "refused_address",
    "epochs",
    "slow_ticks",
)
_SWIM_GAUGES = (
    "members_up",
    "members_total",
    "incarnation",
    "health_score",
    "loop_lag",
    "loop_lag_max",
)
_SWIM_BY_KIND = {
    "sent_packets": ("rt_swim_packets", "sent"),
    "recv_packets": ("rt_swim_packets", "received"),
    "sent_bytes": ("rt_swim_bytes", "sent"),
    "recv_bytes": ("rt_swim_bytes", "received"),
}
_STATES = ("alive", "probe_failed", "suspected", "dead")
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_CONVERTER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, int | float):
        return float(v)
    return None


class _RuntimeCollector:
    """Collected at scrape time from the runtime (rule 2)."""

    def __init__(self, runtime: RuntimeView, admission: Callable[[], Mapping[str, int]]) -> None:
        self.runtime = runtime
        self.admission = admission

    def collect(self) -> Iterator[Metric]:
        yield from self._membership()
        yield from self._swim()
        yield from self._workers()
        pools = GaugeMetricFamily("rt_pools", "Pools composed on this node", labels=["mod_name"])
        counts: dict[str, int] = {}
        for c in self.runtime.containers():
            counts[c.info.mod_name] = counts.get(c.info.mod_name, 0) + 1
        for mod, n in sorted(counts.items()):
            pools.add_metric([mod], n)
        yield pools
        adm = GaugeMetricFamily("rt_http_slots", "HTTP request slots", labels=["kind"])
        for key, value in self.admission().items():
            adm.add_metric([key], value)
        yield adm

    def _membership(self) -> Iterator[Metric]:
        g = GaugeMetricFamily("rt_members", "Members in the local host table", labels=["state"])
        counts = dict.fromkeys(_STATES, 0)
        try:
            members = self.runtime.membership.members()
        except Exception:
            members = []
        for m in members:
            state = str(getattr(m.state, "value", m.state))
            state = "dead" if state == "left" else state
            counts[state] = counts.get(state, 0) + 1
        for state, n in counts.items():
            g.add_metric([state], n)
        yield g
        yield GaugeMetricFamily(
            "rt_is_leader", "1 if this node is the leader", value=float(self.runtime.is_leader)
        )

    def _swim(self) -> Iterator[Metric]:
        fn = getattr(self.runtime.membership, "statistics", None)
        if not callable(fn):
            return
        try:
            stats = fn()
        except Exception:
            return

        def get(key: str) -> Any:
            return stats.get(key) if isinstance(stats, Mapping) else getattr(stats, key, None)

        for name in _SWIM_COUNTERS:
            if (v := _number(get(name))) is not None:
                yield CounterMetricFamily(f"rt_swim_{name}", f"SWIM {name}", value=v)
        for name in _SWIM_GAUGES:
            if (v := _number(get(name))) is not None:
                yield GaugeMetricFamily(f"rt_swim_{name}", f"SWIM {name}", value=v)
        families: dict[str, CounterMetricFamily] = {}
        for field, (metric, direction) in _SWIM_BY_KIND.items():
            by_kind = get(field)
            if not isinstance(by_kind, Mapping):
                continue
            if metric not in families:
                families[metric] = CounterMetricFamily(
                    metric,
                    f"SWIM {metric.removeprefix('rt_swim_')} by message type",
                    labels=["type", "direction"],
                )
            fam = families[metric]
            for kind, v in sorted(by_kind.items()):
                if (n := _number(v)) is not None:
                    fam.add_metric([str(kind), direction], n)
        dropped = get("dropped")
        if isinstance(dropped, Mapping):
            fam = CounterMetricFamily("rt_swim_dropped", "SWIM packets dropped", labels=["reason"])
            for reason, v in sorted(dropped.items()):
                if (n := _number(v)) is not None:
                    fam.add_metric([str(reason)], n)
            families["rt_swim_dropped"] = fam
        yield from families.values()

    def _workers(self) -> Iterator[Metric]:
        rows = self.runtime.workers.snapshot()
        spec = (
            ("rt_worker_queued_tasks", "num_queued_tasks", "Tasks queued on the worker"),
            ("rt_worker_blocked_tasks", "num_blocked_tasks", "Tasks waiting on subtasks"),
            ("rt_worker_periodic_tasks", "num_periodic_tasks", "Periodic tasks parked"),
            ("rt_worker_retry_tasks", "num_retry_tasks", "Tasks retrying"),
        )
        for metric, key, doc in spec:
            g = GaugeMetricFamily(metric, doc, labels=["worker"])
            for r in rows:
                g.add_metric([str(r["worker_id"])], float(r.get(key) or 0))
            yield g
        c = CounterMetricFamily("rt_worker_tasks_processed", "Tasks done", labels=["worker"])
        for r in rows:
            c.add_metric([str(r["worker_id"])], float(r.get("num_tasks_processed") or 0))
        yield c


class DashboardMetrics:
    """The registry of one app and the instruments its hooks update."""

    def __init__(self, runtime: RuntimeView, admission: Callable[[], Mapping[str, int]]) -> None:
        self.registry = CollectorRegistry(auto_describe=False)
        self.requests = Counter(
            "rt_http_requests",
            "HTTP requests answered",
            ["route", "method", "status"],
            registry=self.registry,
        )
        self.forward_seconds = Histogram(
            "rt_forward_seconds",
            "Per-node queries forwarded to a peer, until answer or error",
            ["query", "outcome"],
            buckets=_FORWARD_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(_RuntimeCollector(runtime, admission))
        self._children: dict[tuple[str | None, str, int], Any] = {}

    def count(self, rule: str | None, method: str, status: int) -> None:
        """One answered request; ``rule`` is the matched werkzeug rule (None: unmatched)."""
        key = (rule, method, status)
        child = self._children.get(key)
        if child is None:
            route = "<unmatched>" if rule is None else _CONVERTER.sub(r"{\1}", rule)
            verb = method if method in _METHODS else "other"  # bounded labels
            child = self.requests.labels(route, verb, str(status))
            if len(self._children) < 4096:
                self._children[key] = child
        child.inc()

    def render(self) -> bytes:
        return generate_latest(self.registry)
