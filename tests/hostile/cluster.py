"""The cluster the hostile inputs are thrown at: two real nodes (node 0 and node 1, dashboards
on, no background workload) holding known data, and the check that they came through intact.

Rules:
1. Nodes run on the tests' process harness (``tests.support``), which ends them whatever the
   test did. Speaking our protocol, node 1 starts first so node 0 joins at once (a hostfile
   names both); speaking memberlist (``wire="memberlist"``), node 0 starts first and node 1
   joins through it (``--join``, no hostfile), each named ``rt-<id>``.
2. Known data is written through the API before any hostile input: on each node a safe block
   device array (two data members, one parity member it creates), a storage-target core over
   the array and a RAM target, blobs of fixed sizes put on the core (their sha256 kept), a
   sacrificial block device (``hx_victim``) that hostile ids aim at but must never reach, and
   two devices made for a peer's array (``made_for``: ``OWNER``): ``hx_lent``, in use by a
   one-member array (``hx_lender``), and ``hx_spare``, free; hostile ``destroy`` calls aim
   at both and at every other pool, and must reach none.
3. ``check_intact`` is the same after every class: both processes running; ``/api/health``
   answering each node within 1 s (each answer's own latency, the best of ``HEALTH_TRIES``);
   each node's membership showing both alive within ``MEMBERSHIP_WAIT``; every blob reading
   back with its sha256, the array verifying clean, the pool table unchanged; no 500 counted
   by either node's ``/metrics``; no traceback in either log. It returns the problems found and
   notes what it measured in the class's tally.
4. A guard for the shared machine, not part of what is tested: each node's address space is
   capped at ``MEMORY_CAP`` (``prlimit``), so an input that makes a node expand memory without
   bound (an alias bomb, before the loader had limits) fails that node, not the machine.
"""

from __future__ import annotations

import re
import resource
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from cluster.local import free_port, log_tail
from tests.support import RETRY_ON, Child, Harness, wait_for

from .tally import ClassTally, shorten

__all__ = ["HEALTH_LIMIT", "Cluster", "check_intact", "counters", "start_cluster"]

HEALTH_LIMIT = 1.0  # seconds: the spec's bound for one /api/health answer
HEALTH_TRIES = 5  # answers measured at most per node and check; the best must be in the limit
MEMBERSHIP_WAIT = 20.0  # seconds for both nodes to show both alive again
START_WAIT = 45.0  # seconds for a node to come up (two busy cores)
MEMORY_CAP = 4 << 30  # bytes of address space per node (rule 4)
CONFIG = "workload:\n  enabled: false\n"
BLOBS = {"b0": 100_000, "b1": 5_000, "b2": 1, "b3": 65_536}
CORE, ARRAY, VICTIM = "710.0", "860.0", "820.0"
LENT, SPARE, OWNER = "830.0", "831.0", "9/990.0/0wner"  # made for a peer's array (rule 2)
COMPOSE = (
    ("rt_bdev", "hx_d0", "810.0", "{bdev_type: ram, capacity: 256K}"),
    ("rt_bdev", "hx_d1", "811.0", "{bdev_type: ram, capacity: 256K}"),
    ("rt_bdev", "hx_victim", VICTIM, "{bdev_type: ram, capacity: 64K}"),
    ("rt_bdev", "hx_lent", LENT, f"{{bdev_type: ram, capacity: 64K, made_for: {OWNER}}}"),
    ("rt_bdev", "hx_spare", SPARE, f"{{bdev_type: ram, capacity: 64K, made_for: {OWNER}}}"),
    ("rt_safe_bdev", "hx_lender", "861.0", "{members: [hx_lent], max_failures: 0}"),
    ("rt_safe_bdev", "hx_array", ARRAY, "{members: [hx_d0, hx_d1], max_failures: 1}"),
    (
        "rt_cte_core",
        "hx_core",
        CORE,
        "{targets: [{name: arr, attach_pool_name: hx_array},"
        " {name: ram, bdev_type: ram, capacity: 512K}]}",
    ),
)


@dataclass
class Cluster:
    """Two running nodes, their dashboard URLs and the data written to each."""

    harness: Harness
    nodes: list[Child]
    urls: list[str]
    blobs: list[dict[str, str]] = field(default_factory=list)  # per node: name -> sha256
    pools: list[list[tuple[str, str, str]]] = field(default_factory=list)  # per node
    seen_5xx: list[float] = field(default_factory=lambda: [0.0, 0.0])  # reported so far
    seen_tracebacks: list[int] = field(default_factory=lambda: [0, 0])

    @property
    def ports(self) -> list[int]:
        """Runtime ports (UDP gossip and TCP RPC) of node 0 and node 1."""
        return [n.port for n in self.nodes]

    @property
    def viz_ports(self) -> list[int]:
        return [int(u.rsplit(":", 1)[1]) for u in self.urls]


def _get(url: str, timeout: float = 10.0) -> Any:
    r = httpx.get(url, timeout=timeout)
    r.raise_for_status()
    return r.json()


def _table(url: str) -> list[tuple[int, str]]:
    nodes = _get(url + "/api/topology")["nodes"]
    return [(n["node_id"], n["state"]) for n in nodes]


def _both_alive(table: list[tuple[int, str]]) -> bool:
    return table == [(0, "alive"), (1, "alive")]


def _pool_table(url: str) -> list[tuple[str, str, str]]:
    return sorted(
        (p["pool_id"], p["pool_name"], p["mod_name"]) for p in _get(url + "/api/pools")["pools"]
    )


def _monitor(url: str, pool: str, query: str) -> Any:
    """The local answer of ``pool``'s monitor to ``query`` (results keyed by the node's id)."""
    results = _get(f"{url}/api/pools/{pool}/monitor?query={query}")["results"]
    assert len(results) == 1, results
    return next(iter(results.values()))


def _seed(url: str) -> dict[str, str]:
    """Compose the pools of rule 2 on the node at ``url`` and put the blobs; their sha256."""
    for mod, name, pool_id, config in COMPOSE:
        form = {"mod_name": mod, "pool_name": name, "pool_id": pool_id, "config": config}
        r = httpx.post(url + "/api/pools/compose", data=form, timeout=30)
        assert r.status_code == 200, (name, r.status_code, r.text)
        assert r.json().get("ok") is True, (name, r.text)
    shas = {}
    for name, size in BLOBS.items():
        answer = _monitor(url, CORE, f"put:hx/{name}:{size}")
        assert answer["ok"] is True, answer
        assert answer["size"] == size, answer
        shas[name] = answer["sha256"]
    return shas


def _membership(harness: Harness, ports: list[int], i: int, wire: str) -> list[str]:
    """Node ``i``'s flags that make it a member (rule 1)."""
    if wire == "memberlist":
        join = ["--join", f"127.0.0.1:{ports[0]}"] if i else []
        return ["--wire", "memberlist", "--node-id", str(i), *join]
    hosts = harness.workdir / "hosts"
    hosts.write_text("".join(f"127.0.0.1:{p}\n" for p in ports))
    return ["--hostfile", str(hosts)]


def start_cluster(harness: Harness, *, wire: str = "swim") -> Cluster:
    """Nodes 0 and 1 speaking ``wire`` (``swim`` or ``memberlist``), converged, with the data
    of rule 2 on each."""
    ports = [free_port(), free_port()]
    work = harness.workdir
    (work / "rt.yaml").write_text(CONFIG)
    children: dict[int, Child] = {}
    for i in (1, 0) if wire == "swim" else (0, 1):
        children[i] = harness.start_node(
            "--config", str(work / "rt.yaml"), *_membership(harness, ports, i, wire),
            "--events", str(work / f"events{i}.jsonl"),
            port=ports[i], viz_port=0, name=f"n{i}",
        )  # fmt: skip
    nodes = [children[0], children[1]]
    for node in nodes:
        resource.prlimit(node.pid, resource.RLIMIT_AS, (MEMORY_CAP, MEMORY_CAP))
    urls = [harness.dashboard_url(n, timeout=START_WAIT) for n in nodes]
    for url in urls:
        wait_for(
            f"both nodes alive in {url}'s table",
            partial(_table, url),
            until=_both_alive,
            timeout=START_WAIT,
            retry_on=(*RETRY_ON, httpx.HTTPError),
        )
    cluster = Cluster(harness, nodes, urls)
    cluster.blobs = [_seed(url) for url in urls]
    cluster.pools = [_pool_table(url) for url in urls]
    return cluster


# -- counters ----------------------------------------------------------------------------------


def counters(url: str) -> dict[str, float]:
    """The node's counters that tell what it refused or dropped, by a flat name:
    ``http_status_<code>`` (summed over routes), ``swim_dropped_<reason>``, and every sample of
    a family named ``rt_rpc*`` or ``rt_*dropped*`` / ``rt_*shed*`` as it is named."""
    text = httpx.get(url + "/metrics", timeout=10).text
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name.endswith("_created"):
                continue
            if s.name == "rt_http_requests_total":
                key = f"http_status_{s.labels.get('status')}"
            elif s.name == "rt_swim_dropped_total":
                key = f"swim_dropped_{s.labels.get('reason')}"
            elif re.match(r"rt_(rpc|.*dropped|.*shed|.*refused|.*rejected)", s.name):
                labels = ",".join(f"{k}={v}" for k, v in sorted(s.labels.items()))
                key = f"{s.name}{{{labels}}}" if labels else s.name
            else:
                continue
            out[key] = out.get(key, 0.0) + s.value
    return out


def delta(before: dict[str, float], after: dict[str, float], prefix: str) -> dict[str, float]:
    """Counters under ``prefix`` that grew, and by how much."""
    return {
        k: after[k] - before.get(k, 0.0)
        for k in sorted(after)
        if k.startswith(prefix) and after[k] > before.get(k, 0.0)
    }


# -- the check after every class ---------------------------------------------------------------


def _health(url: str) -> list[float]:
    """Up to ``HEALTH_TRIES`` answers of /api/health, stopping at the first within the limit;
    each answer's own latency (seconds; a failed request counts as +inf)."""
    latencies = []
    for _ in range(HEALTH_TRIES):
        t0 = time.monotonic()
        try:
            ok = httpx.get(url + "/api/health", timeout=10).status_code == 200
        except httpx.HTTPError:
            ok = False
        latencies.append(time.monotonic() - t0 if ok else float("inf"))
        if latencies[-1] < HEALTH_LIMIT:
            break
    return latencies


def _data_problems(c: Cluster, i: int) -> list[str]:
    url, problems = c.urls[i], []
    for name, sha in c.blobs[i].items():
        try:
            got = _monitor(url, CORE, f"get:hx/{name}")
        except (httpx.HTTPError, KeyError) as exc:
            problems.append(f"node {i}: blob hx/{name} unreadable: {exc!r}")
            continue
        if got.get("sha256") != sha:
            problems.append(f"node {i}: blob hx/{name} changed: {got}")
    verify = _monitor(url, ARRAY, "verify")
    if verify.get("unreadable_slots") or verify.get("parity_mismatches"):
        problems.append(f"node {i}: array hx_array does not verify: {verify}")
    pools = _pool_table(url)
    if pools != c.pools[i]:  # reported once: the new table is the next check's reference
        gone = [shorten(str(p), 60) for p in sorted(set(c.pools[i]) - set(pools))]
        new = [shorten(str(p), 60) for p in sorted(set(pools) - set(c.pools[i]))]
        problems.append(f"node {i}: pool table changed: gone {gone}, new {new}")
        c.pools[i] = pools
    return problems


def _log_problems(c: Cluster, i: int) -> list[str]:
    """New tracebacks in node ``i``'s log since the last check."""
    text = c.harness.log_text(c.nodes[i])
    starts = [m.start() for m in re.finditer(r"Traceback \(most recent call last\)", text)]
    new = starts[c.seen_tracebacks[i] :]
    c.seen_tracebacks[i] = len(starts)
    if not new:
        return []
    block = text[new[0] :].splitlines()[1:60]
    last = next((ln for ln in block if ln and not ln.startswith(" ")), "?")
    return [f"node {i}: {len(new)} new traceback(s) in its log, the first: {last!r}"]


def _error_problems(c: Cluster, i: int) -> list[str]:
    """5xx answers other than 503 counted by node ``i`` since the last check."""
    now = counters(c.urls[i])
    errors = {k: v for k, v in now.items() if re.fullmatch(r"http_status_5\d\d", k)}
    total = sum(v for k, v in errors.items() if k != "http_status_503")
    seen, c.seen_5xx[i] = c.seen_5xx[i], total
    return [f"node {i}: answered 5xx (/metrics, all so far): {errors}"] if total > seen else []


def check_intact(c: Cluster, ct: ClassTally) -> list[str]:
    """The invariants of rule 3 after a class; the problems found (empty: intact)."""
    problems: list[str] = []
    running = []
    for i, node in enumerate(c.nodes):
        state = c.harness.state(node)
        if state == "running":
            running.append(i)
        else:
            status = c.harness.exit_status(node)
            tail = log_tail(node.log, 15)
            problems.append(f"node {i} is {state} (exit status {status}); log tail:\n{tail}")
    for i in running:
        latencies = _health(c.urls[i])
        ct.notes.setdefault("health_latency_s", {})[f"node{i}"] = [round(x, 3) for x in latencies]
        if min(latencies) >= HEALTH_LIMIT:
            problems.append(f"node {i}: /api/health never answered within 1 s: {latencies}")
    for i in running:
        try:
            wait_for(
                f"node {i} to show both nodes alive",
                partial(_table, c.urls[i]),
                until=_both_alive,
                timeout=MEMBERSHIP_WAIT,
                retry_on=(*RETRY_ON, httpx.HTTPError),
            )
        except AssertionError as exc:
            problems.append(f"node {i}: membership: {exc}")
    for i in running:
        problems += _data_problems(c, i) + _error_problems(c, i) + _log_problems(c, i)
    return problems
