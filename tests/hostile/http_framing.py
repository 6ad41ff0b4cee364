"""Hostile HTTP framing and bodies: request lines, headers, lengths and encodings the HTTP
layer must refuse, and bodies of the POST routes (the compose ``config`` YAML above all).

Rules:
1. Each ``Probe`` says whether it must be refused; see ``http_inputs`` for the shared rules
   (ids aimed at real pools, no legitimate state change, nothing random without the seed).
2. An alias bomb is small on the wire and huge if expanded: the nodes run under an address
   space cap (``cluster.MEMORY_CAP``) so a loader without limits fails a node, not the machine.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any
from urllib.parse import quote

from .cluster import ARRAY, CORE, VICTIM
from .http_inputs import FORM, Probe
from .rawhttp import request_bytes

__all__ = ["alias_bomb", "body_probes", "header_probes"]


def _post(
    headers: Sequence[tuple[str, str | bytes]], body: bytes = b"", length: bool = False
) -> bytes:
    """A compose POST with ``headers`` and ``body`` (Content-Length added only if ``length``)."""
    target = "/api/pools/compose"
    return request_bytes("POST", target, headers=headers, body=body, content_length=length)


def _get(**kw: Any) -> bytes:
    return request_bytes("GET", "/api/health", **kw)


def _line(text: str) -> bytes:
    """A request written out by hand (``|`` stands for CRLF)."""
    return text.replace("|", "\r\n").encode("latin-1")


def header_probes() -> Iterator[Probe]:
    """Hostile request lines, headers and framing, on a GET and on the compose POST; the
    third item says whether the request must be refused."""
    cl, te, ct = "Content-Length", "Transfer-Encoding", "Content-Type"
    raw: list[tuple[str, bytes, bool]] = [
        ("huge header 100 KB", _get(headers=[("X-A", "a" * 100_000)]), True),
        ("1000 headers", _get(headers=[(f"X-{i}", "v") for i in range(1000)]), False),
        ("bad Host evil.example", _get(host="evil.example"), True),
        ("Host with NUL", _get(host=b"127.0.0.1\x00evil"), True),
        ("empty Host", _get(host=""), True),
        ("Host 5000 chars", _get(host="h" * 5000), True),
        ("two Hosts", _get(headers=[("Host", "evil.example")]), True),
        ("no Host", _line("GET /api/health HTTP/1.1|Connection: close||"), True),
        ("absolute-form target", request_bytes("GET", "http://evil.example/api/health"), False),
        ("non-ASCII header value", _get(headers=[("X-A", b"\xff\xfe\xc3")]), False),
        ("NUL in header", _get(headers=[("X-A", b"a\x00b")]), True),
        ("header without colon", _line("GET /api/health HTTP/1.1|Host: 127.0.0.1|bad||"), True),
        ("bare LF", b"GET /api/health HTTP/1.1\nHost: 127.0.0.1\nConnection: close\n\n", False),
        ("method with NUL", request_bytes("G\x00T", "/api/health"), True),
        ("method FOO", request_bytes("FOO", "/api/health"), True),
        ("HTTP/9.9", _line("GET /api/health HTTP/9.9|Host: 127.0.0.1||"), False),
        ("TLS hello", b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + bytes(64), True),
        ("request line 20 KB", request_bytes("GET", "/api/health?a=" + "b" * 20_000), True),
        ("Content-Length abc", _post([FORM, (cl, "abc")]), True),
        ("Content-Length -1", _post([FORM, (cl, "-1")]), True),
        ("two Content-Lengths", _post([FORM, (cl, "3"), (cl, "5")], b"a=1"), True),
        ("Content-Length 2^64", _post([FORM, (cl, "18446744073709551616")]), True),
        (
            "Content-Length 1 GiB, 10 bytes sent",
            _post([FORM, (cl, str(1 << 30))], b"a=1&b=2&c="),
            True,
        ),
        ("chunked, bad size", _post([FORM, (te, "chunked")], b"zz\r\nabc\r\n0\r\n\r\n"), True),
        ("chunked, huge size", _post([FORM, (te, "chunked")], b"FFFFFFFFFFFF\r\nabc\r\n"), True),
        (
            "chunked and Content-Length",
            _post([FORM, (te, "chunked")], b"3\r\na=1\r\n0\r\n\r\n", True),
            True,
        ),
        ("Transfer-Encoding gzip", _post([FORM, (te, "gzip")], b"a=1"), True),
        (
            "Expect 100-continue, no body",
            _post([FORM, ("Expect", "100-continue"), (cl, "10")]),
            True,
        ),
        (
            "charset ebcdic",
            _post([(ct, FORM[1] + "; charset=ebcdic")], b"mod_name=%FF", True),
            True,
        ),
        ("cross-site POST", _post([FORM, ("Sec-Fetch-Site", "cross-site")], b"a=1", True), True),
        (
            "foreign Origin POST",
            _post([FORM, ("Origin", "http://evil.example")], b"a=1", True),
            True,
        ),
    ]
    for what, data, refuse in raw:
        yield Probe(0, what, data, refuse=refuse)


def alias_bomb(field: str, depth: int = 9) -> str:
    """A YAML alias bomb (about 400 bytes; 9**depth strings if expanded) under ``field``."""
    lines = ['x0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for i in range(1, depth):
        lines.append(f"x{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]")
    lines.append(f"{field}: *a{depth - 1}")
    return "\n".join(lines)


def _form(fields: dict[str, str]) -> bytes:
    return "&".join(f"{quote(k)}={quote(v)}" for k, v in fields.items()).encode()


def body_probes() -> Iterator[Probe]:
    """Hostile bodies on the compose, create and action POSTs: non-JSON, JSON of wrong types,
    2 MiB, alias bombs in ``config`` for each field the issue names, 10,000-deep nesting,
    nonsense values."""
    compose = "/api/pools/compose"

    def post(what: str, target: str, body: bytes, ctype: str = FORM[1]) -> Probe:
        data = request_bytes("POST", target, headers=[("Content-Type", ctype)], body=body)
        return Probe(0, what, data)

    yield post("non-JSON as JSON", compose, b"{not json", "application/json")
    yield post(
        "JSON of wrong types",
        compose,
        b'{"mod_name": [1], "pool_name": {"a": null}}',
        "application/json",
    )
    yield post("10,000-deep JSON", compose, b"[" * 10_000 + b"]" * 10_000, "application/json")
    yield post("2 MiB form", compose, b"a=" + b"x" * (2 << 20))
    yield post("2 MiB JSON", compose, b'"' + b"x" * (2 << 20) + b'"', "application/json")
    yield post("binary body", compose, bytes(range(256)) * 8, "application/octet-stream")
    fields = {
        "rt_bdev": ("capacity", "bdev_type"),
        "rt_safe_bdev": ("members", "parity_members", "max_failures", "chunk_size"),
        "rt_cte_core": ("targets", "rescore_period_s"),
    }
    for mod, names in fields.items():
        for name in names:
            form = _compose(mod, "hz_bomb", "990.0", alias_bomb(name))
            yield post(f"alias bomb in {mod} {name}", compose, _form(form))
    for depth_text in (
        "[" * 10_000 + "]" * 10_000,
        "{a: " * 10_000 + "1" + "}" * 10_000,
        "- " * 5000 + "x",
    ):
        form = _compose("rt_bdev", "hz_deep", "991.0", depth_text)
        yield post(f"deep YAML config {depth_text[:6]!r}", compose, _form(form))
    yield from _nonsense_values(post)


def _compose(mod: str, name: str, pool_id: str, config: str = "", **extra: str) -> dict[str, str]:
    return {"mod_name": mod, "pool_name": name, "pool_id": pool_id, "config": config, **extra}


def _nonsense_values(make: Callable[[str, str, bytes], Probe]) -> Iterator[Probe]:
    """Compose requests and module actions with nonsense values (the issue's list)."""
    compose, cap = "/api/pools/compose", "{capacity: 16K}"
    bad_configs = (
        "{bdev_type: file, capacity: 1P}",
        "{bdev_type: ram, capacity: -1}",
        "{bdev_type: ram, capacity: .nan}",
        "{bdev_type: ram, capacity: 1e309}",
        "{bdev_type: ram, capacity: " + "9" * 5000 + "}",
        "{bdev_type: ram, capacity: 1_0K}",
        "{bdev_type: [ram], capacity: 16K}",
        "!!python/object/apply:os.system ['true']",
        "{bdev_type: ram, capacity: !!binary AAAA}",
    )
    forms = [_compose("rt_bdev", f"hz_bad{i}", f"99{i}.1", c) for i, c in enumerate(bad_configs)]
    forms += [
        _compose("rt_bdev", "x" * 5000, "993.0", cap),
        _compose("rt_bdev", "a\x00b", "993.1", cap),
        _compose("rt_bdev", "hz_sp", f" {VICTIM} ", cap),
        _compose("rt_bdev", "hz_neg", "-993.0", cap),
        _compose("rt_bdev", "hz_q", "998.0", cap, pool_query="direct_id:-1"),
        _compose("rt_safe_bdev", "hz_arr", "994.0", "{members: [hx_d0], max_failures: -1}"),
        _compose("rt_safe_bdev", "hz_arr", "994.1", "{members: [hx_d0], chunk_size: 0}"),
        _compose("rt_cte_core", "hz_core", "995.0", "{rescore_period_s: 1.0e-9}"),
        _compose("rt_admin", "hz_admin", "996.0"),
        _compose("x" * 5000, "hz", "997.0"),
    ]
    for form in forms:
        yield make(f"compose {str(form)[:90]}", compose, _form(form))
    for target, form in _actions():
        yield make(f"POST {target.rsplit('/', 1)[1]} {str(form)[:70]}", target, _form(form))


def _actions() -> list[tuple[str, dict[str, str]]]:
    """Module actions with malformed values; ids aim at real pools (they must be refused)."""
    create = "/api/mod/rt_bdev/create"
    arr, core = f"/api/mod/rt_safe_bdev/{ARRAY}", f"/api/mod/rt_cte_core/{CORE}"
    add, rm, rep = f"{arr}/add_member", f"{arr}/remove_member", f"{arr}/replace_member"
    reg, unreg = f"{core}/register_target", f"{core}/unregister_target"
    return [
        (create, {"pool_name": "hz_c", "pool_id": "999.0", "capacity": "1P", "bdev_type": "file"}),
        (create, {"pool_name": "hz_c", "pool_id": "999.1", "capacity": "-4K"}),
        (create, {"pool_name": "hz_c", "pool_id": "999.2", "capacity": "\uff11K"}),
        (add, {"member_name": ""}),
        (add, {"member_name": "hz_m", "capacity": "1e309"}),
        (add, {"member_name": "hz_m", "capacity": "16K", "node_id": "-5"}),
        (add, {"member_name": "hz_m", "capacity": "16K", "as_parity": "2"}),
        (rm, {"member_pool_id": " 810.0 "}),
        (rm, {"member_pool_id": "810.0", "was_faulty": "maybe"}),
        (rep, {"failed_pool_id": "810.-0", "member_name": "hz_r", "capacity": "256K"}),
        (rep, {"failed_pool_id": "810.0", "member_name": "hz_r", "capacity": "-1"}),
        (reg, {"name": "", "capacity": "16K"}),
        (reg, {"name": "hz_t", "attach_pool_id": f" {VICTIM} "}),
        (reg, {"name": "hz_t", "capacity": "nan"}),
        (unreg, {"name": "x" * 5000}),
    ]
