"""Hypothesis strategies the tests of untrusted input share: what a msgpack peer can send."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from swim.messages import Ack, Alive, Dead, Nack, Ping, PingReq, Suspect

__all__ = ["msgpack_scalars", "msgpack_values"]


def msgpack_scalars(size: int, *extra: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Every kind of scalar msgpack carries: None, booleans, integers to both ends of its
    range (-2**63 .. 2**64-1), floats (NaN and infinities too), text and bytes up to ``size``
    long; and any ``extra`` strategies (values a parser is likelier to half accept)."""
    return st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**63), max_value=2**64 - 1),
        st.floats(),
        st.text(max_size=size),
        st.binary(max_size=size),
        *extra,
    )


def msgpack_values(
    scalars: st.SearchStrategy[Any], *, width: int, max_leaves: int, key_size: int | None = None
) -> st.SearchStrategy[Any]:
    """``scalars`` nested in lists of up to ``width`` items and, with ``key_size``, in maps
    keyed by text up to ``key_size`` long; at most ``max_leaves`` scalars in all."""

    def nest(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        lists = st.lists(inner, max_size=width)
        if key_size is None:
            return lists
        return lists | st.dictionaries(st.text(max_size=key_size), inner)

    return st.recursive(scalars, nest, max_leaves=max_leaves)


def swim_messages(
    ids: st.SearchStrategy[int],
    hosts: st.SearchStrategy[str],
    ports: st.SearchStrategy[int] | None = None,
    counts: st.SearchStrategy[int] | None = None,
) -> st.SearchStrategy[Any]:
    """Our format's messages (``swim.messages``): sequence numbers and node ids from ``ids``,
    ports from ``ports`` and incarnations and boots from ``counts`` (both ``ids`` if not
    given), host names from ``hosts``."""
    port = ids if ports is None else ports
    big = ids if counts is None else counts
    return st.one_of(
        st.builds(Ping, ids, ids, ids, hosts, port),
        st.builds(PingReq, ids, ids, hosts, port, st.booleans(), ids, hosts, port),
        st.builds(Ack, ids, ids),
        st.builds(Nack, ids, ids),
        st.builds(Alive, big, ids, hosts, port, big),
        st.builds(Suspect, big, ids, ids),
        st.builds(Dead, big, ids, ids),
    )
