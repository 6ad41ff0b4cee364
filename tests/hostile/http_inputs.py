"""Hostile HTTP requests, generated from the node's own route table with a fixed seed.

Rules:
1. Every request is a ``Probe``: which node it goes to, its raw bytes, what it is (for the
   tally) and whether it must be refused (``refuse``: a 2xx is a failure) or may be accepted.
2. Malformed ids are malformed on purpose and aimed at real pools: a padded, signed or
   non-ASCII form of the sacrificial pool's id must be refused, never read as that id.
3. Random values come from ``random.Random(SEED)``; a random value that happens to be a valid
   id or a number is left out, so every generated id is malformed.
4. Nothing here is a legitimate state change: puts of monitor queries go to tag ``hz``, never
   to the known data's tag ``hx``; no delete, no destroy of a real id.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import quote

from .cluster import ARRAY, CORE, VICTIM
from .rawhttp import Piece, request_bytes

__all__ = [
    "FORM",
    "SEED",
    "Probe",
    "forward_probes",
    "malformed_ids",
    "path_probes",
    "query_probes",
]

SEED = 12  # issue 12
FORM = ("Content-Type", "application/x-www-form-urlencoded")
RANDOM_PER_ROUTE = 8
_ALPHABETS = (
    "0123456789.",
    "0123456789.-+e_ ",
    "".join(chr(c) for c in range(32, 127)),
    "\x00\x01\x09\x0a\x0d\x1b\x7f",
    "é١１𝟙\u202e\ufeff\uffff漢ß",
)


@dataclass(frozen=True, slots=True)
class Probe:
    """One hostile request: to node ``node`` (0 or 1), ``what`` it is, its bytes."""

    node: int
    what: str
    request: bytes | Sequence[Piece]
    refuse: bool = True  # a 2xx answer is a failure


def malformed_ids(valid: str) -> list[str]:
    """Path segments (percent-encoded as sent) that look like ``valid`` (a pool id ``a.b`` or
    a node id) but are malformed: padded, signed, non-ASCII, NUL, dotted, huge, float."""
    a, _, b = valid.partition(".")
    pool = bool(b)
    out = [
        "%20" + valid,
        valid + "%20",
        "%09" + valid,
        valid + "%0A",
        "+" + valid,
        "-" + valid,
        valid + "%00",
        "%00" + valid,
        "..",
        "%2E%2E",
        "..%2F..%2Fetc%2Fpasswd",
        "9" * 5000,
        "%C3%A9t%C3%A9",
        "%F0%9F%92%A5",
        "nan",
        "inf",
        "-inf",
        "1e309",
        "18446744073709551616",
        "4294967296",
        "-1",
        "0x10",
    ]
    if pool:
        out += [
            f"{a}.-{b}",
            f"{a}.+{b}",
            f"{a}%20.{b}",
            f"{a}.{b}.0",
            f"{a}_0.{b}",
            f"{a}.{b}_0",
            f"{a}",
            f"{a}.",
            f".{b}",
            f"{a}e0.{b}",
            "%D9%A1.0",
            "%EF%BC%91.0",
            f"{a}.{b}%2F..",
            f"{a}.4294967296",
            f"18446744073709551616.{b}",
            "9" * 5000 + ".0",
            "1." + "0" * 5000,
        ]
    else:
        out += [f"{valid}.0", f"{valid}e0", "%D9%A1", "%EF%BC%91", f"{valid}_0", "local%00"]
    return out


def _random_values(rng: random.Random, n: int) -> list[str]:
    """``n`` random strings (percent-encoded) that are neither ids nor numbers."""
    out: list[str] = []
    while len(out) < n:
        alphabet = rng.choice(_ALPHABETS)
        text = "".join(rng.choice(alphabet) for _ in range(rng.choice((1, 2, 5, 40, 300))))
        if re.fullmatch(r"\s*[0-9]+(\.[0-9]+)?\s*|local|self", text):
            continue
        out.append(quote(text, safe=""))
    return out


def _pool_for(path: str, mod_name: str, destroy: str = VICTIM) -> str:
    """The real pool a route's ``{pool}`` aims at: the module's own, the victim for destroy."""
    if path.endswith("/destroy"):
        return destroy
    return {"rt_safe_bdev": ARRAY, "rt_cte_core": CORE}.get(mod_name, CORE)


def _fill(path: str, mod_name: str, destroy: str = VICTIM) -> str:
    """``path`` with its parameters set to real values (the pools the suite owns)."""
    return path.replace("{pool}", _pool_for(path, mod_name, destroy)).replace("{node}", "local")


def _request(method: str, target: str) -> bytes:
    return request_bytes(method, target, headers=[FORM] if method == "POST" else [])


def path_probes(routes: Sequence[dict[str, str]], mounts: Sequence[str]) -> Iterator[Probe]:
    """Every route with each parameter replaced by malformed and random values; routes
    without parameters and asset mounts with hostile suffixes."""
    rng = random.Random(SEED)
    for r in routes:
        method, path, mod = r["method"], r["path"], r["mod_name"]
        params = re.findall(r"\{(\w+)\}", path)
        if not params:
            for suffix in ("/..", "%00", "/%2E%2E/%2E%2E/etc/passwd", "/" + "x" * 5000, "%FF"):
                yield Probe(0, f"{method} {path}{suffix[:40]}", _request(method, path + suffix))
            continue
        for name in params:
            valid = _pool_for(path, mod) if name == "pool" else "1"
            values = malformed_ids(valid) + _random_values(rng, RANDOM_PER_ROUTE)
            for value in values:
                target = _fill(path.replace("{" + name + "}", value), mod)
                yield Probe(0, f"{method} {target}", _request(method, target))
    for prefix in mounts:
        for suffix in (
            "..%2F..%2Fetc%2Fpasswd",
            "%00",
            "a" * 5000,
            "%2E%2E/%2E%2E/pyproject.toml",
            "index.html%00.js",
            "%C0%AE%C0%AE/x",
        ):
            target = f"{prefix}/{suffix}"
            yield Probe(0, f"GET {target}", _request("GET", target))


_QUERIES = (
    ("zzz=1&__proto__=x&query[]=a", False),
    ("query=stats&query=verify&routing=local&routing=broadcast", False),
    ("a=" + "A" * 8000, False),
    ("K" * 8000 + "=1", False),
    ("&".join(f"a{i}=1" for i in range(1500)), False),
    ("%", False),
    ("%G1=1&a=%zz", False),
    ("=&&=&;;", False),
    ("query=%FF%FE", True),
    ("routing=%FF", True),
)


def query_probes(routes: Sequence[dict[str, str]]) -> Iterator[Probe]:
    """Hostile query strings on every route (parameters filled with real values), and hostile
    values of the parameters the routes read."""
    for r in routes:  # destroy aims at a pool that does not exist: it takes no parameters
        method, target = r["method"], _fill(r["path"], r["mod_name"], destroy="999.9")
        reads = method == "GET" and target.endswith(("/monitor", "/system_stats", "/compose"))
        for query, refuse in _QUERIES:
            yield Probe(
                0,
                f"{method} {target}?{query[:60]}",
                _request(method, f"{target}?{query}"),
                refuse=refuse and reads,
            )
    mon = f"/api/pools/{CORE}/monitor"
    for value in (
        "put:hz/a:99999999999",
        "put:hz/a:-1",
        "put:hz/a:1e9",
        "put:hz/a:%EF%BC%91",
        "put::",
        "get:../../x",
        "get:hz/" + "n" * 5000,
        "stats%00",
        "put:hz/a:1_0",
        "put:hz/a:%2B1",
        "put:hz/a:%201",
    ):
        yield Probe(0, f"GET {mon}?query={value[:40]}", _request("GET", f"{mon}?query={value}"))
    for value in (
        "direct_id:-1",
        "direct_id:99999999999999999999",
        "range:0:-1",
        "range:-5:10",
        "physical:1e9",
        "direct_hash:nan",
        "broadcast%00",
        "%20broadcast",
        "direct_id:%D9%A1",
        "range:0:99999999999",
        "direct_id:1_0",
        "dynamic:x",
    ):
        target = f"{mon}?query=stats&routing={value}"
        yield Probe(0, f"GET {target[:80]}", _request("GET", target))
    for value in ("-1", "nan", "1e309", "9" * 5000, "%D9%A1", "1_0", "%201", "0x1", "1.5"):
        target = f"/api/nodes/local/system_stats?min_event_id={value}"
        yield Probe(0, f"GET {target[:80]}", _request("GET", target), refuse=value != "-1")
    for value in ("%00", "x" * 5000, "rt_admin%00", "..%2F..", "%FF"):
        target = f"/api/pools/compose?mod_name={value}"
        yield Probe(0, f"GET {target[:80]}", _request("GET", target), refuse=False)


def forward_probes() -> Iterator[Probe]:
    """Requests node 0 forwards to node 1, with hostile parameters (node 1 must neither answer
    500 nor fail; node 0 answers within the forward bound)."""
    for view in ("workers", "system_stats", "containers", "bdevs"):
        for query in (
            "min_event_id=-1",
            "min_event_id=1e309",
            "min_event_id=" + "9" * 5000,
            "min_event_id=%D9%A1",
            "zzz=%00",
            "a=" + "A" * 8000,
            "%72outing=x",
        ):
            target = f"/api/nodes/1/{view}?{query}"
            yield Probe(0, f"GET {target[:80]}", _request("GET", target), refuse=False)
    mon = f"/api/pools/{CORE}/monitor"
    for routing in ("broadcast", "direct_id:1", "%72outing"):
        for query in (
            "put:hz/a:-1",
            "put:hz/a:99999999999",
            "get:hz/" + "n" * 5000,
            "%00",
            "stats",
            "x" * 8000,
            "verify",
            "get:%2E%2E/%2E%2E",
        ):
            key = "routing" if routing != "%72outing" else "%72outing"
            value = routing if routing != "%72outing" else "broadcast"
            target = f"{mon}?query={query}&{key}={value}"
            yield Probe(0, f"GET {target[:80]}", _request("GET", target), refuse=False)
