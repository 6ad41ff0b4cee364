"""How a route describes itself for the API document (``/openapi.json``): its parameters, the
body it answers and the refusals it can make. Data only; the dashboard turns it into OpenAPI
(``dashboard.openapi``), modules attach it to their routes (``cluster.api.ModuleRoute.api``).

Rules:
1. A schema is a plain JSON Schema mapping (draft 2020-12, which OpenAPI 3.1 embeds), built
   with the few helpers here so the same shape is written the same way everywhere.
2. A parameter is read from the one merged map of query string and form body
   (``dashboard.params``): a GET documents it in the query, a POST in a form body. A
   parameter named like a ``{segment}`` of the path describes that segment. An optional
   parameter given empty is read as left out, unless ``blank=False`` (then it is a 400).
3. ``errors`` are the statuses the route's own handler answers, with when; the HTTP layer's
   refusals (400 malformed, 403 Host and cross-site, 404 for a path segment that does not
   match, 408 and 413 for bodies, 414, 431, 503 short of resources) are added to every route
   by the document, not declared here. Every error body is ``{"error": ...}``; a route with
   ``fields=True`` may answer 400 ``{"ok": false, "errors": {field: message}}`` instead.
4. A ``Link`` names an operation by ``"METHOD /path/{pattern}"`` and says which of its
   parameters come from this route's answer (``$response.body#/pool_id``), so a tool can
   chain them: compose a pool, then ask its monitor, then destroy it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ACTION_PARAM",
    "ANY",
    "BOOLEAN",
    "INTEGER",
    "NUMBER",
    "POOL_ERRORS",
    "POOL_ID",
    "POOL_NAME",
    "POOL_PARAM",
    "SIZE",
    "STRING",
    "ApiParam",
    "ApiSpec",
    "Link",
    "Schema",
    "array",
    "form_params",
    "mapping",
    "nullable",
    "obj",
    "one_of",
]

Schema = Mapping[str, Any]
ANY: Schema = {}
STRING: Schema = {"type": "string"}
INTEGER: Schema = {"type": "integer"}
NUMBER: Schema = {"type": "number"}
BOOLEAN: Schema = {"type": "boolean"}


def nullable(schema: Schema) -> Schema:
    """``schema`` or JSON ``null`` (a figure that could not be read, a non-finite float)."""
    return {"anyOf": [dict(schema), {"type": "null"}]}


def obj(required: Mapping[str, Schema], optional: Mapping[str, Schema] | None = None) -> Schema:
    """An object with these keys (``required`` always present); other keys are allowed, so a
    field added later is no violation, but a field removed is."""
    props = {k: dict(v) for k, v in {**required, **(optional or {})}.items()}
    return {"type": "object", "properties": props, "required": list(required)}


def array(items: Schema) -> Schema:
    return {"type": "array", "items": dict(items)}


def mapping(values: Schema) -> Schema:
    """An object keyed by ids or names (``{"0": ..., "1": ...}``)."""
    return {"type": "object", "additionalProperties": dict(values)}


def one_of(*values: str) -> Schema:
    return {"type": "string", "enum": list(values)}


@dataclass(frozen=True, slots=True)
class ApiParam:
    """One parameter: its name, schema, what it means, whether it must be given, and example
    values a tool should try first."""

    name: str
    schema: Schema = field(default_factory=lambda: STRING)
    doc: str = ""
    required: bool = False
    examples: tuple[Any, ...] = ()
    blank: bool = True  # an empty value means "left out" (the document allows it); else a 400


@dataclass(frozen=True, slots=True)
class Link:
    """From this route's answer to another operation (rule 4)."""

    name: str
    target: str  # "GET /api/pools/{pool}/monitor"
    params: Mapping[str, str]  # target parameter -> runtime expression
    doc: str = ""


@dataclass(frozen=True, slots=True)
class ApiSpec:
    """What one route takes and answers (rules 2 and 3)."""

    params: tuple[ApiParam, ...] = ()
    body: Schema | None = None  # the success body (None: any JSON)
    errors: Mapping[int, str] = field(default_factory=dict)
    fields: bool = False  # 400 may be {"ok": false, "errors": {...}}
    media: str = "application/json"  # of the success body
    links: tuple[Link, ...] = ()
    doc: str = ""  # a longer description than the route's one-line doc


def form_params(
    fields: Iterable[Any],
    extra: Iterable[ApiParam] = (),
    *,
    overrides: Mapping[str, ApiParam] | None = None,
) -> tuple[ApiParam, ...]:
    """Parameters of a create form's fields (``FormField``): a select's options are an enum,
    pool ids and names have their own schemas, required stays required; a field named in
    ``overrides`` is described by that parameter instead (the form's required is a hint to
    a person; the node may fill a field left out); then ``extra``."""
    known = {"pool_id": POOL_ID, "pool_name": POOL_NAME}
    out = []
    for f in fields:
        if overrides and f.name in overrides:
            out.append(overrides[f.name])
            continue
        schema: Schema = one_of(*f.options) if f.options else known.get(f.name, STRING)
        if f.required and schema is STRING:
            schema = {**STRING, "minLength": 1}  # an empty value is a missing one
        examples = (f.default,) if f.default else ()
        out.append(ApiParam(f.name, schema, f.help or f.label, f.required, examples))
    return (*out, *extra)


# <major>.<minor>, canonical digits (each part at most 2^32-1: a larger one is a 400)
POOL_ID: Schema = {"type": "string", "pattern": r"^(0|[1-9][0-9]{0,9})\.(0|[1-9][0-9]{0,9})$"}
# 1 to 64 printable characters, no comma, no space at either end (``name_error``)
POOL_NAME: Schema = {
    "type": "string",
    "minLength": 1,
    "maxLength": 64,
    "pattern": r"^[^\s,\x00-\x1f\x7f]([^,\x00-\x1f\x7f]*[^\s,\x00-\x1f\x7f])?$",
}
# size text as ``cluster.ground.parse.parse_size`` reads it: digits, a K/M/G/T/P suffix, one B
SIZE: Schema = {
    "type": "string",
    "maxLength": 64,
    "pattern": r"^[0-9]+(\.[0-9]+)?([KMGTPkmgtp]([iI]?[bB])?|[bB])?$",
    "examples": ["64K", "1M"],
}
POOL_PARAM = ApiParam("pool", POOL_ID, "the pool's id, <major>.<minor>", True, ("800.0",))
ACTION_PARAM = ApiParam(
    "action", one_of("", "validate", "create"), "validate: check every field, create nothing"
)
POOL_ERRORS: Mapping[int, str] = {
    400: "a pool id that does not parse, or a bad parameter",
    404: "no pool of this module with that id",
    409: "the pool was destroyed while the request ran, or cannot do this now",
}
