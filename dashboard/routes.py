"""The app's routes as ``/api/routes`` and ``/openapi.json`` both list them, from its URL map.

Rules:
1. A route is a rule of a module's blueprint (the blueprint is named by its ``mod_name``) and
   one of its methods other than HEAD and OPTIONS; asset mounts and the retired stubs are not
   routes. ``app_routes`` is the one walk over the URL map that both answers use, so the
   document cannot list other routes than ``/api/routes``.
2. A route's declaration for the document (``cluster.api.ApiSpec``) sits on its view
   function, put there by ``declare`` where the route is registered; ``Route.api`` is None
   for a route registered without one (the document still lists it, flagged).
3. Paths are written as patterns: ``/api/nodes/<node>/workers`` -> ``/api/nodes/{node}/workers``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from quart import Quart

from cluster.api import ApiSpec

__all__ = ["ADMIN", "ASSET_ENDPOINTS", "Route", "app_routes", "declare", "declared", "pattern"]

ADMIN = "rt_admin"
ASSET_ENDPOINTS = frozenset({f"{ADMIN}.asset", f"{ADMIN}.asset_root"})
_ATTR = "rt_api"  # the attribute of a view function that holds its ApiSpec
_CONVERTER = re.compile(r"<(?:[^:<>]+:)?([^<>]+)>")
F = TypeVar("F", bound=Callable[..., Any])


def pattern(rule: str) -> str:
    """``/api/nodes/<node>/workers`` -> ``/api/nodes/{node}/workers``."""
    return _CONVERTER.sub(r"{\1}", rule)


def declare(spec: ApiSpec | None) -> Callable[[F], F]:
    """Put ``spec`` on a view function (a decorator; rule 2)."""

    def mark(view: F) -> F:
        if spec is not None:
            setattr(view, _ATTR, spec)
        return view

    return mark


def declared(view: Any) -> ApiSpec | None:
    spec = getattr(view, _ATTR, None)
    return spec if isinstance(spec, ApiSpec) else None


@dataclass(frozen=True, slots=True)
class Route:
    """One method of one route: what ``/api/routes`` shows, and what the document reads."""

    method: str
    path: str  # a pattern (rule 3)
    mod_name: str
    doc: str  # the first line of the view's docstring
    api: ApiSpec | None

    def to_json(self) -> dict[str, str]:
        return {
            "method": self.method,
            "path": self.path,
            "mod_name": self.mod_name,
            "doc": self.doc,
        }


def app_routes(app: Quart, modules: Mapping[str, Any]) -> Iterator[Route]:
    """Every route of ``app`` registered by one of ``modules`` (rule 1), sorted by path and
    method."""
    found = []
    for rule in app.url_map.iter_rules():
        bp, _, _ = rule.endpoint.rpartition(".")
        if bp not in modules or rule.endpoint in ASSET_ENDPOINTS:
            continue
        view = app.view_functions[rule.endpoint]
        doc = (view.__doc__ or "").strip()
        first = doc.splitlines()[0] if doc else ""
        for method in sorted((rule.methods or set()) - {"HEAD", "OPTIONS"}):
            found.append(Route(method, pattern(rule.rule), bp, first, declared(view)))
    found.sort(key=lambda r: (r.path, r.method))
    return iter(found)
