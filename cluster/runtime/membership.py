"""What the runtime reads of the cluster: a ``Membership`` (the SWIM handle in a node,
``SingleNode`` in a runtime embedded without a cluster). The runtime never changes it."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["MemberLike", "Membership", "SingleNode", "state_name"]


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


class Membership(Protocol):
    def members(self) -> list[Any]: ...
    def leader_id(self) -> int | None: ...


class _Self:
    __slots__ = ("host", "incarnation", "node_id", "port", "state")

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self.node_id, self.host, self.port = node_id, host, port
        self.state, self.incarnation = "alive", 0


class SingleNode:
    """Membership of a runtime that runs without a cluster: itself, alive, the leader."""

    def __init__(self, node_id: int, host: str, port: int) -> None:
        self._me = _Self(node_id, host, port)

    def members(self) -> list[Any]:
        return [self._me]

    def leader_id(self) -> int | None:
        return self._me.node_id


def state_name(state: Any) -> str:
    """The API's name of a member state (``left`` is shown as ``dead``)."""
    name = str(getattr(state, "value", state))
    return "dead" if name == "left" else name
