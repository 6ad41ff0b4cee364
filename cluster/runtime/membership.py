"""What the runtime reads of the cluster: a ``Membership`` (the SWIM handle in a node,
``SingleNode`` in a runtime embedded without a cluster). The runtime never changes it.

Rules:
1. Everything here is read: the host table, the leader, the numbered history of table changes
   (``events``, ``since``) and the faults injected at this node. Changing faults is the node's
   control RPC's business, not the runtime's.
2. The names the API shows are made here once: ``state_name`` (the topology's ``state``, with
   ``left`` as ``dead``), ``view_name`` (a member as an observer holds it: ``alive``,
   ``suspect``, ``dead`` or ``left``) and ``faults_json`` (the shape of the faults answer).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = [
    "EventLike",
    "FaultsLike",
    "MemberLike",
    "Membership",
    "NoFaults",
    "SingleNode",
    "faults_json",
    "state_name",
    "view_name",
]


class MemberLike(Protocol):
    """One row of the host table (``swim.Member`` has these fields)."""

    @property
    def node_id(self) -> int: ...
    @property
    def host(self) -> str: ...
    @property
    def port(self) -> int: ...
    @property
    def state(self) -> Any: ...
    @property
    def incarnation(self) -> int: ...


class EventLike(Protocol):
    """One numbered table change (``swim.HistoryEntry``)."""

    def as_dict(self) -> dict[str, Any]:
        """``seq``, ``wall`` (epoch s), ``mono`` (host-monotonic s), ``observer``, ``subject``,
        ``old`` (None at first sight), ``new``, ``incarnation``, ``cause``."""


class FaultsLike(Protocol):
    """The faults injected at a node (``swim.Faults``): loss in percent, delay in ms."""

    @property
    def loss_pct(self) -> float: ...
    @property
    def delay_ms(self) -> float: ...
    @property
    def blocked(self) -> Collection[int]: ...
    @property
    def peer_loss_pct(self) -> Mapping[int, float]: ...
    @property
    def peer_delay_ms(self) -> Mapping[int, float]: ...
    @property
    def cut(self) -> Collection[int]: ...
    @property
    def clock_offset(self) -> float: ...
    @property
    def clock_rate(self) -> float: ...
    @property
    def active(self) -> bool: ...


class Membership(Protocol):
    def members(self) -> list[Any]: ...
    def leader_id(self) -> int | None: ...

    def events(self, after: int, limit: int) -> tuple[Sequence[EventLike], int, int]:
        """Table changes with ``seq > after``, oldest first, at most ``limit``:
        ``(events, next, dropped)`` (see ``swim.History.page``)."""

    def since(self, member_id: int) -> float | None:
        """Wall time (epoch s) of the last change of ``member_id`` seen here, or None."""

    def describe(self, member_id: int) -> dict[str, Any] | None:
        """A member's memberlist ``name``, ``tags`` and ``rtsim`` (is it an rtsim node?);
        None in a cluster that speaks rtsim's own protocol (``swim.SwimHandle.describe``)."""

    @property
    def faults(self) -> FaultsLike: ...


@dataclass(frozen=True, slots=True)
class NoFaults:
    """The faults of a runtime without a network: none."""

    loss_pct: float = 0.0
    delay_ms: float = 0.0
    blocked: frozenset[int] = frozenset()
    peer_loss_pct: Mapping[int, float] = field(default_factory=dict)
    peer_delay_ms: Mapping[int, float] = field(default_factory=dict)
    cut: frozenset[int] = frozenset()
    clock_offset: float = 0.0
    clock_rate: float = 1.0
    active: bool = False


class _Self:
    __slots__ = ("host", "incarnation", "node_id", "port", "state")

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.state, self.incarnation = "alive", 0


class SingleNode:
    """Membership of a runtime that runs without a cluster: itself, alive, the leader; no
    history and no faults."""

    faults: FaultsLike = NoFaults()

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self._me = _Self(node_id, host, port)

    def members(self) -> list[Any]:
        return [self._me]

    def leader_id(self) -> int | None:
        return self._me.node_id

    def events(self, after: int, limit: int) -> tuple[Sequence[EventLike], int, int]:
        return (), after, 0

    def since(self, member_id: int) -> float | None:
        return None

    def describe(self, member_id: int) -> dict[str, Any] | None:
        return None


def state_name(state: Any) -> str:
    """The API's name of a member state (``left`` is shown as ``dead``)."""
    name = str(getattr(state, "value", state))
    return "dead" if name == "left" else name


_VIEWS = {"alive": "alive", "probe_failed": "alive", "suspected": "suspect", "suspect": "suspect"}


def view_name(state: Any) -> str:
    """A member as its observer holds it: ``alive`` (a missed probe alone is no news),
    ``suspect``, ``dead`` or ``left``."""
    name = str(getattr(state, "value", state))
    return _VIEWS.get(name, name)


def faults_json(faults: FaultsLike) -> dict[str, Any]:
    """``blocked`` ids, ``loss`` (percent) and ``delay`` (ms) per peer id as text, with ``"all"``
    for the default when it is not zero, ``cut`` (the ids this node sends nothing to),
    ``clock`` (``offset`` s, ``rate``) and ``active``; empty when no fault is set."""

    def per_peer(default: float, peers: Mapping[int, float]) -> dict[str, float]:
        shaped = {"all": default} if default else {}
        return shaped | {str(p): v for p, v in sorted(peers.items())}

    return {
        "blocked": sorted(faults.blocked),
        "loss": per_peer(faults.loss_pct, faults.peer_loss_pct),
        "delay": per_peer(faults.delay_ms, faults.peer_delay_ms),
        "cut": sorted(faults.cut),
        "clock": {"offset": faults.clock_offset, "rate": faults.clock_rate},
        "active": faults.active,
    }
