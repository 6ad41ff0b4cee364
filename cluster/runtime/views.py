"""Who sees whom as what: the observer x subject matrix of the cluster's views.

Each member's own table is its truth; this node asks every member it knows for its row (one
admin monitor task, ``VIEW_QUERY``: its views of every member, its leader, its faults) and
lays the rows side by side.

Rules:
1. Observers are the members of this node's table, every one of them: a member this node holds
   dead may be alive and believe otherwise (the other side of a partition), and one that is
   gone fails fast. This node answers its own row here; the others are asked all at once, at
   most ``MAX_ASKS`` at a time, under ONE deadline: the forward timeout (5 s) from the
   request's start, queueing included. So the answer comes within the bound even when peers
   hang.
2. The question travels on the observer's own channel (``Peers.observe``), which this node's
   injected faults do not cut: a partition hides the other side from SWIM and from explicit
   forwards, not from the view of who believes what (that view is why faults are injected).
   Each row carries its observer's faults, so the page says who is cut off from whom.
3. Errors are short: ``timeout`` (no answer by the deadline), ``unreachable`` (the transport
   failed: refused, reset), ``not an rtsim node`` (a memberlist member that is not ours, such
   as a Serf agent: never asked; ``names`` then gives every member's name), else the peer's
   own error message, cut short. A row whose shape is
   wrong is refused as a whole ("malformed answer"), never half used.
4. The matrix is laid out by one pure function, ``build_views``: subjects are every id seen
   (this node's table and every row); ``agree`` holds only when every answering observer
   holds the same view of the same subjects and they name one leader.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import trio

from cluster.ground.errors import ApiError, PeerUnavailable, PeerUnreachable
from cluster.ground.parse import MAX_NODE_ID, ParseError, parse_int

from .admin import VIEW_QUERY, admin_query
from .nodestate import Forwarder

__all__ = ["MAX_ASKS", "VIEWS", "build_views", "cluster_views", "read_row"]

JSON = dict[str, Any]
MAX_ASKS = 64  # observers asked at the same time (open connections, not time, are the cost)
VIEWS = ("alive", "suspect", "dead", "left")
MAX_REASON = 80  # characters of a peer's error kept in ``errors``


class _Malformed(ValueError):
    pass


def read_row(answer: Any) -> JSON:
    """An observer's answer to ``VIEW_QUERY`` checked: ``{"views": {id: view}, "leader": id or
    None, "faults": dict or None}``; ``_Malformed`` (a ValueError) otherwise."""
    if not isinstance(answer, Mapping) or not isinstance(answer.get("views"), Mapping):
        raise _Malformed("no views")
    views: dict[int, str] = {}
    try:
        for key, view in answer["views"].items():
            if view not in VIEWS:
                raise _Malformed(f"unknown view {view!r:.20}")
            views[parse_int(key, low=0, high=MAX_NODE_ID, what="subject")] = view
        leader = answer.get("leader")
        if leader is not None:
            leader = parse_int(str(leader), low=0, high=MAX_NODE_ID, what="leader")
    except (ParseError, TypeError) as exc:
        raise _Malformed(str(exc)) from None
    faults = answer.get("faults")
    return {
        "views": views,
        "leader": leader,
        "faults": faults if isinstance(faults, dict) else None,
    }


def _reason(exc: ApiError) -> str:
    text = exc.message
    return text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."


async def cluster_views(rt: Forwarder) -> JSON:
    """The matrix as this node gathers it now (rules 1 to 3); see ``build_views``."""
    members = rt.membership.members()
    rows: dict[int, JSON] = {rt.node_id: read_row(admin_query(rt, VIEW_QUERY, {}))}
    errors: dict[int, str] = {}
    names: dict[str, str] = {}
    asked = []
    for m in members:
        about = rt.membership.describe(m.node_id)
        if about is not None:
            names[str(m.node_id)] = about["name"]
            if not about["rtsim"]:  # a Serf agent, say: it has no views to ask for
                errors[m.node_id] = "not an rtsim node"
                continue
        if m.node_id != rt.node_id:
            asked.append(m.node_id)
    deadline = trio.current_time() + rt.forward_timeout
    limiter = trio.CapacityLimiter(MAX_ASKS)

    async def ask(nid: int) -> None:
        with trio.move_on_at(deadline):
            async with limiter:
                try:
                    peers, member = rt.reach(nid)
                    answer = await peers.observe(member, VIEW_QUERY, {})
                    rows[nid] = read_row(answer)
                except _Malformed:
                    errors[nid] = "malformed answer"
                except PeerUnreachable:
                    errors[nid] = "unreachable"
                except PeerUnavailable as exc:  # the forward's own bound, or the peer's own
                    errors[nid] = "timeout" if trio.current_time() >= deadline else _reason(exc)
                except ApiError as exc:
                    errors[nid] = _reason(exc)
                return
        errors[nid] = "timeout"

    async with trio.open_nursery() as nursery:
        for nid in asked:
            nursery.start_soon(ask, nid)
    observers = [m.node_id for m in members]
    answer = {"node_id": rt.node_id, **build_views(observers, rows, errors)}
    return answer | {"names": names} if names else answer


def build_views(
    observers: Iterable[int], rows: Mapping[int, JSON], errors: Mapping[int, str]
) -> JSON:
    """The matrix from each answering observer's checked row (``read_row``) and each silent
    observer's error: ``observers``, ``subjects``, ``views``, ``errors``, ``leaders``,
    ``faults`` (keyed by observer id as text; null for an observer without a row), ``agree``."""
    everyone = sorted({*observers, *rows, *errors})
    subjects = sorted({*everyone, *(s for row in rows.values() for s in row["views"])})
    answered = [rows[o] for o in everyone if o in rows]
    seen = {tuple(sorted(row["views"].items())) for row in answered}
    leaders = {row["leader"] for row in answered}
    return {
        "observers": everyone,
        "subjects": subjects,
        "views": {
            str(o): {str(s): v for s, v in sorted(rows[o]["views"].items())} if o in rows else None
            for o in everyone
        },
        "errors": {str(o): errors[o] for o in everyone if o in errors and o not in rows},
        "leaders": {str(o): rows[o]["leader"] if o in rows else None for o in everyone},
        "faults": {str(o): rows[o]["faults"] if o in rows else None for o in everyone},
        "agree": len(seen) == 1 and len(leaders) == 1 and None not in leaders,
    }
