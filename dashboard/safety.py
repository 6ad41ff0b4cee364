"""Safe by default: what the dashboard refuses before any handler runs.

The spec has no authentication (anyone who reaches the port may call everything) and binds to
loopback. That still leaves two browser attacks on a loopback dashboard, which these rules stop:

1. DNS rebinding: a page on ``evil.example`` whose name re-resolves to 127.0.0.1 can read this
   API as same-origin. Refused by the Host check: the ``Host`` header must name an address or
   name this node serves (its bind address, and the addresses a bind name resolves to;
   localhost, 127.0.0.1 and [::1] when bound to loopback; any address literal and the
   machine's own names when bound to a wildcard; plus ``viz.allowed_hosts``) and, when it
   carries a port, the bound port. Else 403. Another address of the machine is not one this
   dashboard serves: it is refused like any other name.
2. Cross-site request forgery: any page can make a browser POST a form here (destroying a
   pool). Refused for every method but GET/HEAD/OPTIONS when the browser marks the request
   ``Sec-Fetch-Site: cross-site`` or ``same-site``, or sends an ``Origin`` that is not this
   node's own (``http://`` + the Host header). Else 403. Clients that send neither header
   (curl, scripts, ``rt_run``) are not browsers and pass.
3. Request bodies are capped at 1 MiB (413); no CORS headers are ever sent, so other origins
   cannot read answers.

``allowed_hosts`` entries are ``name`` (any port) or ``name:port``; ``*`` turns the Host check
off (behind a reverse proxy that rewrites Host and enforces access itself).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass, field

from quart.globals import request_ctx
from quart.wrappers import Request

from cluster.ground.errors import Forbidden
from cluster.ground.parse import ParseError, parse_port

__all__ = ["SAFE_METHODS", "SitePolicy", "split_host"]

SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
WILDCARDS = ("", "0.0.0.0", "::")


def split_host(value: str) -> tuple[str, int | None]:
    """``"[::1]:8080"`` -> ``("::1", 8080)``; ``"Example.org."`` -> ``("example.org", None)``.

    Raises ValueError (only) for a port that is not 1 to 65535 in canonical ASCII digits
    (``cluster.ground.parse``) or an unbalanced ``[``.
    """
    value = value.strip().lower()
    port: int | None = None
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            raise ValueError("unbalanced [")
        name, rest = value[1:end], value[end + 1 :]
        if rest:
            if not rest.startswith(":"):
                raise ValueError("bad port")
            port = _port(rest[1:])
    elif value.count(":") == 1:
        name, _, raw = value.partition(":")
        port = _port(raw)
    else:
        name = value  # a bare name, or an unbracketed IPv6 literal
    return name.rstrip("."), port


def _port(raw: str) -> int:
    try:
        return parse_port(raw, what="port", low=1)
    except ParseError as exc:
        raise ValueError(f"bad port: {exc}") from None


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def _addresses(name: str) -> set[str]:
    try:
        infos = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):  # unresolvable: the bind itself fails
        return set()
    return {str(info[4][0]).partition("%")[0].lower() for info in infos}


def _is_loopback(name: str) -> bool:
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True, slots=True)
class SitePolicy:
    """Which ``Host`` values this dashboard answers; see the module docstring."""

    port: int
    names: frozenset[str]
    any_address: bool  # bound to a wildcard: every address literal is one of ours
    extra: frozenset[tuple[str, int | None]]  # from viz.allowed_hosts
    check_host: bool = True
    _seen: dict[str, bool] = field(default_factory=dict, compare=False, repr=False)

    @classmethod
    def for_bind(cls, bind: str, port: int, allowed_hosts: Iterable[str] = ()) -> SitePolicy:
        bind = bind.strip().strip("[]").lower()
        names = {bind}
        wildcard = bind in WILDCARDS
        if wildcard or _is_loopback(bind):
            names.update(LOOPBACK_NAMES)
        if wildcard:
            names.update(n.lower() for n in (socket.gethostname(), socket.getfqdn()) if n)
        elif not _is_ip(bind):  # a name: the socket is bound to what it resolves to
            names.update(_addresses(bind))
        extra: set[tuple[str, int | None]] = set()
        check = True
        for entry in allowed_hosts:
            if entry.strip() == "*":
                check = False
                continue
            try:
                extra.add(split_host(entry))
            except ValueError:
                continue
        return cls(port, frozenset(names - {""}), wildcard, frozenset(extra), check)

    def host_ok(self, host: str) -> bool:
        known = self._seen.get(host)
        if known is None:
            known = self._host_ok(host)
            if len(self._seen) < 1024:  # a bounded memo: clients send a handful of values
                self._seen[host] = known
        return known

    def _host_ok(self, host: str) -> bool:
        try:
            name, port = split_host(host)
        except ValueError:
            return False
        if (name, port) in self.extra or (name, None) in self.extra:
            return True
        if port is not None and port != self.port:
            return False
        return name in self.names or (self.any_address and _is_ip(name))

    def check(self, req: Request | None = None) -> None:
        """Refuse ``req`` (default: the current request) with Forbidden when a rule above
        says so."""
        if req is None:
            req = request_ctx.request
        headers = req.headers
        host = headers.get("host")
        if self.check_host and host is not None and not self.host_ok(host):
            raise Forbidden(
                f"refusing request for host '{host}': not an address this dashboard serves "
                "(add it to viz.allowed_hosts to allow it)"
            )
        method = req.method
        if method in SAFE_METHODS:
            return
        site = headers.get("sec-fetch-site", "").lower()
        if site in ("cross-site", "same-site"):
            raise Forbidden(
                f"refusing {site} {method}: state-changing requests must come from "
                "this dashboard's own pages"
            )
        origin = headers.get("origin")
        if origin is not None and (host is None or origin.lower() != f"http://{host.lower()}"):
            raise Forbidden(
                f"refusing {method} from origin '{origin}': not this dashboard's origin"
            )
