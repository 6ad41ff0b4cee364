"""The OpenAPI 3.1 document of a running app, ``GET /openapi.json``.

Rules:
1. Built on each request from the app's URL map (``dashboard.routes.app_routes``: exactly the
   routes ``/api/routes`` lists, the modules' included) and each route's declaration
   (``cluster.api.ApiSpec``); no path is written here by hand, so the document and the
   app cannot drift apart.
2. A route without a declaration is still listed, with any JSON as its answer, the common
   refusals, and ``x-rt-undeclared: true`` (the tests fail on it).
3. A GET's parameters are query parameters; a POST's are one form body
   (``application/x-www-form-urlencoded``). ``{segments}`` are required path parameters. An
   optional parameter also allows the empty value, which the node reads as left out (unless
   its declaration says ``blank=False``).
   Every error body is the shared ``Error`` component; a route that validates fields at once
   may answer 400 with ``FieldErrors`` instead.
4. Every operation lists the HTTP layer's refusals (``COMMON``: malformed, Host and
   cross-site, slow or oversized bodies, long request lines and headers, transfer codings,
   short of resources), and 404 when it has a path segment (a value with ``/`` in it is
   another path).
5. Examples come from the node itself: ``node`` from its host table, ``pool`` from its pool
   table (a module's own pools under ``/api/mod/<mod>/``), ``mod_name`` from its loaded
   modules, so a client's first tries are values this node knows; at most ``MAX_EXAMPLES``
   each, so a node with many pools or peers does not write a document that size times over.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from quart import Quart

from cluster.api import ApiParam, ApiSpec
from cluster.runtime import RuntimeView

from .routes import ADMIN, Route, app_routes

__all__ = ["COMMON", "build_document", "operation_id"]

JSON = dict[str, Any]
FORM = "application/x-www-form-urlencoded"
ERROR = {"$ref": "#/components/schemas/Error"}
FIELD_ERRORS = {"$ref": "#/components/schemas/FieldErrors"}
COMMON: dict[int, tuple[str, str]] = {  # status -> (component name, when)
    400: (
        "Malformed",
        "a query string or form body that is not UTF-8 or not urlencoded, too "
        "many fields, a malformed Host header",
    ),
    403: ("Refused", "the Host header does not name this node, or a cross-site POST"),
    408: ("SlowBody", "the body was not complete 5 s after the request arrived"),
    413: ("TooLarge", "a body over 1 MiB"),
    414: ("TargetTooLong", "a request line over 8 KiB"),
    431: ("HeadersTooLarge", "headers over 16 KiB"),
    501: ("NotImplemented", "a transfer coding other than chunked"),
    503: ("Unavailable", "the node is short of resources, or a forward found no slot in time"),
}
MAX_EXAMPLES = 8  # live examples per parameter (rule 5)
NO_ROUTE = "no route: a path segment that does not match (one with / in it, say)"
_SEGMENT = re.compile(r"\{([^{}]+)\}")


def operation_id(method: str, path: str) -> str:
    """``GET /api/nodes/{node}/workers`` -> ``get_api_nodes_node_workers``."""
    words = re.sub(r"[^A-Za-z0-9]+", "_", path).strip("_")
    return f"{method.lower()}_{words}" if words else f"{method.lower()}_root"


def _components() -> JSON:
    error = {"type": "object", "properties": {"error": {"type": "string"}}, "required": ["error"]}
    fields = {
        "type": "object",
        "properties": {
            "ok": {"const": False},
            "errors": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["ok", "errors"],
    }
    responses = {name: _error(when) for name, when in COMMON.values()}
    return {"schemas": {"Error": error, "FieldErrors": fields}, "responses": responses}


def _error(when: str, schema: Mapping[str, Any] = ERROR) -> JSON:
    return {"description": when, "content": {"application/json": {"schema": dict(schema)}}}


def _with_examples(schema: Mapping[str, Any], examples: list[Any]) -> JSON:
    return {**schema, "examples": examples} if examples else dict(schema)


def _live_examples(runtime: RuntimeView, route: Route) -> dict[str, list[Any]]:
    """Rule 5."""
    found: dict[str, list[Any]] = {
        "mod_name": [m for m in runtime.modules if m != ADMIN or route.method == "GET"]
    }
    if "{node}" in route.path:
        found["node"] = ["local", *(str(m.node_id) for m in runtime.membership.members())]
    if "{pool}" in route.path:
        own = route.path.startswith("/api/mod/")
        found["pool"] = [
            str(c.info.pool_id)
            for c in runtime.containers()
            if not own or c.info.mod_name == route.mod_name
        ]
    return {name: values[:MAX_EXAMPLES] for name, values in found.items()}


def _allows_empty(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` accepts the empty string (for the schemas declarations use)."""
    if "enum" in schema:
        return "" in schema["enum"]
    if "const" in schema:
        return bool(schema["const"] == "")
    if "anyOf" in schema:
        return any(_allows_empty(s) for s in schema["anyOf"])
    if schema.get("type", "string") != "string" or schema.get("minLength", 0) > 0:
        return False
    return "pattern" not in schema or re.search(schema["pattern"], "") is not None


def _schema(p: ApiParam, required: bool, live: Mapping[str, list[Any]]) -> JSON:
    """``p``'s schema with its examples (rule 5), the empty value allowed if optional (rule 3)."""
    schema = dict(p.schema)
    if not required and p.blank and not _allows_empty(schema):
        schema = {"anyOf": [schema, {"const": ""}]}
    return _with_examples(schema, live.get(p.name) or list(p.examples))


def _param(p: ApiParam, where: str, live: Mapping[str, list[Any]]) -> JSON:
    required = p.required or where == "path"
    out: JSON = {
        "name": p.name,
        "in": where,
        "required": required,
        "schema": _schema(p, required, live),
    }
    if p.doc:
        out["description"] = p.doc
    return out


def _parameters(route: Route, spec: ApiSpec, live: Mapping[str, list[Any]]) -> JSON:
    """``parameters`` and, for a POST with fields, ``requestBody`` (rule 3)."""
    declared = {p.name: p for p in spec.params}
    segments = _SEGMENT.findall(route.path)
    params = [_param(declared.get(name, ApiParam(name)), "path", live) for name in segments]
    rest = [p for p in spec.params if p.name not in segments]
    out: JSON = {}
    if route.method == "GET":
        params += [_param(p, "query", live) for p in rest]
    elif rest:
        props = {}
        for p in rest:
            schema = _schema(p, p.required, live)
            props[p.name] = {**schema, "description": p.doc} if p.doc else schema
        required = [p.name for p in rest if p.required]
        body = {"type": "object", "properties": props, "required": required}
        out["requestBody"] = {"required": False, "content": {FORM: {"schema": body}}}
    if params:
        out["parameters"] = params
    return out


def _responses(route: Route, spec: ApiSpec) -> JSON:
    ok: JSON = {"description": "the answer"}
    ok["content"] = {spec.media: {"schema": dict(spec.body) if spec.body is not None else {}}}
    responses: JSON = {"200": ok}
    for status, when in sorted(spec.errors.items()):
        fields = spec.fields and status == 400
        schema = {"oneOf": [ERROR, FIELD_ERRORS]} if fields else ERROR
        responses[str(status)] = _error(when, schema)
    if spec.fields and "400" not in responses:
        responses["400"] = _error(
            "fields that do not validate (every one at once), or " + COMMON[400][1],
            {"oneOf": [ERROR, FIELD_ERRORS]},
        )
    if "{" in route.path and "404" not in responses:
        responses["404"] = _error(NO_ROUTE)
    for status, (name, _) in COMMON.items():
        responses.setdefault(str(status), {"$ref": f"#/components/responses/{name}"})
    return dict(sorted(responses.items()))


def _operation(route: Route, runtime: RuntimeView) -> JSON:
    spec = route.api or ApiSpec()
    op: JSON = {
        "operationId": operation_id(route.method, route.path),
        "summary": route.doc,
        "tags": [route.mod_name],
    }
    if spec.doc:
        op["description"] = spec.doc
    op.update(_parameters(route, spec, _live_examples(runtime, route)))
    op["responses"] = _responses(route, spec)
    if route.api is None:
        op["x-rt-undeclared"] = True
    return op


def _link(paths: Mapping[str, Any], route: Route, ops: set[str]) -> None:
    """The links of ``route``'s answer (``ApiSpec.links``) as operation ids; a link to an
    operation this app does not have (its module is not loaded) is left out."""
    if route.api is None or not route.api.links:
        return
    links = {}
    for link in route.api.links:
        method, _, path = link.target.partition(" ")
        target = operation_id(method, path)
        if target in ops:
            links[link.name] = {"operationId": target, "parameters": dict(link.params)}
            if link.doc:
                links[link.name]["description"] = link.doc
    if links:
        paths[route.path][route.method.lower()]["responses"]["200"]["links"] = links


@functools.cache
def _version() -> str:
    try:
        return version("rtsim")
    except PackageNotFoundError:
        return "0"


def build_document(app: Quart, runtime: RuntimeView) -> JSON:
    """The document of ``app`` serving ``runtime`` (rules 1 to 5)."""
    routes = list(app_routes(app, runtime.modules))
    paths: JSON = {}
    for route in routes:
        paths.setdefault(route.path, {})[route.method.lower()] = _operation(route, runtime)
    ops = {operation_id(r.method, r.path) for r in routes}
    for route in routes:
        _link(paths, route, ops)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": f"rtsim node {runtime.node_id}",
            "version": _version(),
            "description": "The JSON API and pages of one rtsim node, generated from its "
            "running app (the routes of /api/routes). Parameters come from the query string "
            'and urlencoded form bodies as one map; every error is {"error": ...}.',
        },
        "tags": [{"name": name} for name in runtime.modules],
        "paths": paths,
        "components": _components(),
    }
