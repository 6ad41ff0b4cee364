"""The Host allowlist of a dashboard bound by name: the name and what it resolves to (the
address the socket is bound to), nothing else."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from dashboard import safety
from dashboard.safety import SitePolicy

DNS = {"dash.example": ["10.0.0.5", "fd00::5"]}


def fake_getaddrinfo(host: str, port: Any, *args: Any, **kw: Any) -> list[Any]:
    if host not in DNS:
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
    return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (a, 0)) for a in DNS[host]]


def test_a_bind_name_allows_its_addresses_and_nothing_else(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safety.socket, "getaddrinfo", fake_getaddrinfo)
    p = SitePolicy.for_bind("dash.example", 9000)
    for ok in ("dash.example:9000", "10.0.0.5:9000", "[fd00::5]:9000", "DASH.example."):
        assert p.host_ok(ok), ok
    for bad in ("10.0.0.6:9000", "127.0.0.1:9000", "localhost:9000", "10.0.0.5:9001",
                socket.gethostname()):  # fmt: skip
        assert not p.host_ok(bad), bad


def test_an_unresolvable_bind_name_allows_only_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(safety.socket, "getaddrinfo", fake_getaddrinfo)
    p = SitePolicy.for_bind("gone.example", 9000)
    assert p.host_ok("gone.example:9000")
    assert not p.host_ok("10.0.0.5:9000")


def test_an_address_bind_allows_that_address_only() -> None:
    p = SitePolicy.for_bind("198.51.100.7", 9000)
    assert p.host_ok("198.51.100.7:9000")
    for bad in ("127.0.0.1:9000", "localhost:9000", "198.51.100.8:9000", socket.gethostname()):
        assert not p.host_ok(bad), bad
