"""One parameter map per request: the query string joined with a form body.

Rules (the reference's):
1. ``application/x-www-form-urlencoded`` bodies of at most ``MAX_BODY`` bytes are parsed into
   the same map as the query string; on a collision the query string wins.
2. ``+`` is a space; a key without ``=`` has the empty value; the first of repeated keys wins.
3. A body that is not UTF-8 or not urlencoded is a 400, not a 500; so is a query string or
   body of more than ``MAX_FIELDS`` fields. ``BadRequest`` is the only error raised here.
"""

from __future__ import annotations

from urllib.parse import parse_qsl

from quart import request
from werkzeug.exceptions import RequestEntityTooLarge

from cluster.ground.errors import BadRequest

from .errors import MAX_BODY

__all__ = ["FORM_TYPE", "MAX_FIELDS", "parse_pairs", "request_params"]

FORM_TYPE = "application/x-www-form-urlencoded"
MAX_FIELDS = 1000  # parameters in one query string or form body


def parse_pairs(text: str, where: str) -> dict[str, str]:
    """``a=1&b+c=x+y&flag`` -> ``{"a": "1", "b c": "x y", "flag": ""}``; first key wins."""
    try:
        pairs = parse_qsl(
            text,
            keep_blank_values=True,
            strict_parsing=False,
            errors="strict",
            max_num_fields=MAX_FIELDS,
        )
    except ValueError as exc:  # not UTF-8 once percent-decoded, or too many fields
        raise BadRequest(f"malformed request: {where}: {exc}") from None
    out: dict[str, str] = {}
    for key, value in pairs:
        out.setdefault(key, value)
    return out


async def request_params() -> dict[str, str]:
    """The merged parameter map of the current request (query string wins)."""
    raw_query: bytes = request.scope.get("query_string", b"")
    try:
        query = parse_pairs(raw_query.decode("utf-8"), "query string") if raw_query else {}
    except UnicodeDecodeError:
        raise BadRequest("malformed request: query string is not UTF-8") from None
    if request.method in ("GET", "HEAD") or request.mimetype != FORM_TYPE:
        return query
    body = await request.get_data(cache=True, as_text=False, parse_form_data=False)
    assert isinstance(body, bytes)
    if len(body) > MAX_BODY:  # Quart enforces MAX_CONTENT_LENGTH too; this keeps the rule local
        raise RequestEntityTooLarge()
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise BadRequest("malformed request: form body is not UTF-8") from None
    form = parse_pairs(text, "form body")
    form.update(query)
    return form
