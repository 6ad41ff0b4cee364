"""The memberlist edge: memberlist's name-keyed messages to the machine's id-keyed ones, and back.

The machine keeps its integer ids and its own messages; only this edge knows names.

Rules:
1. Ids. This node keeps its own id. A member that says, in its node meta, that it is the
   rtsim node ``k`` (tag ``rtsim``) gets ``k`` when no other name holds it; any other name
   gets an id derived from the name (``FOREIGN_BASE`` and up, the next free one on a
   collision), so the nodes of one cluster mostly agree. A name keeps its id while the
   machine holds that member; at most ``max_names`` names are held: when that many are,
   the names of ids the machine does not hold (refused newcomers, forgotten members) are let
   go first, and only if none is a new name refused and counted (``refused_name``).
2. Boots. memberlist has none: an update about this node carries this node's boot, one about
   any other member ``FOREIGN_BOOT``. So no update is ever a restart by boot, and a member
   comes back by a higher incarnation alone, as in memberlist (docs/membership.md).
3. Acks carry no sender: the edge remembers the member each outgoing ping and indirect ping
   was for (the last ``PENDING`` sequence numbers) and names it in the machine's ack.
4. Suspicions and deaths of a name never seen are skipped (memberlist ignores them too); an
   incarnation beyond memberlist's uint32 is never sent.
"""

from __future__ import annotations

import zlib
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import msgpack

from .. import messages as ours
from ..members import MemberState
from ..messages import StateEntry
from . import codec
from .codec import VSN, NodeState

__all__ = [
    "FOREIGN_BASE",
    "FOREIGN_BOOT",
    "UNKNOWN_PEER",
    "Edge",
    "Member",
    "decode_tags",
    "encode_tags",
    "name_id",
]

FOREIGN_BASE = 1 << 24
UNKNOWN_PEER = FOREIGN_BASE - 1  # who a push/pull is from when the stream does not say
_ID_SPAN = (1 << 31) - FOREIGN_BASE
FOREIGN_BOOT = 1
PENDING = 4096
RTSIM_TAG = "rtsim"
_U32 = (1 << 32) - 1
_STATE_CODE = {
    MemberState.ALIVE: 0,
    MemberState.PROBE_FAILED: 0,
    MemberState.SUSPECTED: 1,
    MemberState.DEAD: 2,
    MemberState.LEFT: 3,
}
_CODE_STATE = [MemberState.ALIVE, MemberState.SUSPECTED, MemberState.DEAD, MemberState.LEFT]


def encode_tags(tags: dict[str, str]) -> bytes:
    """Serf's node meta: 0xFF, then a msgpack map of tags."""
    packed: bytes = msgpack.packb(tags, use_bin_type=False)
    return b"\xff" + packed


def decode_tags(meta: bytes) -> dict[str, str]:
    """The tags in Serf's node meta (a meta without the 0xFF mark is a ``role``, as Serf reads
    it); {} for meta that does not decode."""
    if not meta:
        return {}
    if meta[0] != 0xFF:
        return {"role": meta.decode("utf-8", "replace")}
    try:
        raw = msgpack.unpackb(meta[1:], **codec.limits(codec.MAX_META))
    except Exception:  # tags are shown, never trusted: a bad map is no tags
        return {}
    if not isinstance(raw, dict):
        return {}
    return {
        k.decode("utf-8", "replace"): v.decode("utf-8", "replace")
        for k, v in raw.items()
        if isinstance(k, bytes) and isinstance(v, bytes)
    }


@dataclass(slots=True)
class Member:
    """What the edge knows of a member besides the machine's row."""

    name: str
    meta: bytes = b""
    vsn: bytes = VSN
    tags: dict[str, str] = field(default_factory=dict)

    @property
    def rtsim(self) -> bool:
        return RTSIM_TAG in self.tags


class Edge:
    """One node's translation between memberlist and its machine (sans-IO)."""

    def __init__(
        self,
        node_id: int,
        name: str,
        tags: dict[str, str],
        *,
        boot: Callable[[], int],
        id_at: Callable[[str, int], int | None],
        max_names: int,
        drop: Callable[[str], None],
        holds: Callable[[int], bool],
    ) -> None:
        self.node_id, self.name = node_id, name
        meta = encode_tags({**tags, RTSIM_TAG: str(node_id)})
        if len(meta) > codec.MAX_META:
            raise ValueError(f"node tags take {len(meta)} bytes, more than {codec.MAX_META}")
        me = Member(name, meta, VSN, decode_tags(meta))
        self.members: dict[int, Member] = {node_id: me}
        self._ids: dict[str, int] = {name: node_id}
        self._boot, self._id_at, self._drop = boot, id_at, drop
        self._max_names = max_names
        self._holds = holds  # does the machine hold this id?
        self._pending: OrderedDict[int, int] = OrderedDict()

    # ---- names and ids (rule 1) -----------------------------------------------------------

    def id_of(self, name: str, meta: bytes = b"") -> int | None:
        """The id of ``name``, assigned now if new; None (counted) when the map is full."""
        known = self._ids.get(name)
        if known is not None:
            m = self.members[known]
            if meta and known != self.node_id and meta != m.meta:  # decoded once per change
                m.meta, m.tags = meta, decode_tags(meta)
            return known
        if len(self._ids) >= self._max_names and not self._let_go():
            self._drop("refused_name")
            return None
        tags = decode_tags(meta)
        new = _hinted(tags.get(RTSIM_TAG, ""))
        if new is None or new in self.members:
            new = name_id(name)
            while new in self.members:
                new = FOREIGN_BASE + (new - FOREIGN_BASE + 1) % _ID_SPAN
        self._ids[name] = new
        self.members[new] = Member(name, meta, VSN, tags)
        return new

    def _let_go(self) -> bool:
        """Rule 1: forget the names of ids the machine does not hold; did any go?"""
        gone = [n for n, i in self._ids.items() if i != self.node_id and not self._holds(i)]
        for name in gone:
            del self.members[self._ids.pop(name)]
        self._pending = OrderedDict((q, t) for q, t in self._pending.items() if t in self.members)
        return bool(gone)

    def known(self, name: str) -> int | None:
        """The id of ``name`` if it has one here (never assigns)."""
        return self._ids.get(name) if name else None

    def _boot_of(self, node: int) -> int:
        return self._boot() if node == self.node_id else FOREIGN_BOOT  # rule 2

    def _source(self, name: str, host: str, port: int) -> int:
        """Who sent a message: by its name, else by its address, else ``UNKNOWN_PEER`` (never
        an id another member may hold)."""
        got = self._ids.get(name) if name else None
        if got is None:
            got = self._id_at(host, port)
        return UNKNOWN_PEER if got is None else got

    # ---- inbound ------------------------------------------------------------------------------

    def inbound(self, msgs: Iterable[codec.Message], src: tuple[str, int]) -> list[ours.Message]:
        """The machine's messages for memberlist ``msgs`` that came from ``src``."""
        out: list[ours.Message] = []
        for m in msgs:
            got = self._one_in(m, src)
            if got is not None:
                out.append(got)
        return out

    def _one_in(self, m: codec.Message, src: tuple[str, int]) -> ours.Message | None:
        match m:
            case codec.Ping():
                if m.node not in ("", self.name):
                    self._drop("misdirected")
                    return None
                host, port = (m.source_ip, m.source_port) if m.source_ip and m.source_port else src
                return ours.Ping(m.seq, self.node_id, self._source(m.source_node, *src), host, port)
            case codec.IndirectPing():
                target = self.id_of(m.node) if m.node else self._id_at(m.target_ip, m.port)
                if target is None:
                    self._drop("unknown_member")
                    return None
                host, port = (m.source_ip, m.source_port) if m.source_ip and m.source_port else src
                sender = self._source(m.source_node, *src)
                return ours.PingReq(m.seq, target, m.target_ip, m.port, m.nack, sender, host, port)
            case codec.Ack():
                return ours.Ack(m.seq, self._pending.pop(m.seq, UNKNOWN_PEER))
            case codec.Nack():
                return ours.Nack(m.seq, self._source("", *src))
            case codec.Alive():
                node = self.id_of(m.node, m.meta)
                if node is None:
                    return None
                if m.vsn and node != self.node_id:
                    self.members[node].vsn = m.vsn
                return ours.Alive(m.incarnation, node, m.ip, m.port, self._boot_of(node))
            case codec.Suspect() | codec.Dead():
                return self._accusation_in(m, src)
        return None

    def _accusation_in(
        self, m: codec.Suspect | codec.Dead, src: tuple[str, int]
    ) -> ours.Message | None:
        node = self._ids.get(m.node)
        if node is None:  # rule 4
            self._drop("unknown_member")
            return None
        if m.src == m.node:
            accuser: int | None = node  # it left
        elif m.src:
            accuser = self.id_of(m.src)
        else:
            accuser = self._source("", *src)
        if accuser is None:
            return None
        kind = ours.Suspect if isinstance(m, codec.Suspect) else ours.Dead
        return kind(m.incarnation, node, accuser)

    # ---- outbound -----------------------------------------------------------------------------

    def outbound(self, msgs: Iterable[ours.Message]) -> list[bytes]:
        """memberlist message bytes for the machine's ``msgs`` (some may have none: rule 4)."""
        out: list[bytes] = []
        for m in msgs:
            got = self._one_out(m)
            if got is not None:
                out.append(codec.encode_message(got))
        return out

    def _remember(self, seq: int, target: int) -> None:
        self._pending[seq] = target
        self._pending.move_to_end(seq)
        while len(self._pending) > PENDING:
            self._pending.popitem(last=False)

    def _one_out(self, m: ours.Message) -> codec.Message | None:
        match m:
            case ours.Ack():
                return codec.Ack(m.seq)
            case ours.Nack():
                return codec.Nack(m.seq)
            case ours.Ping() | ours.PingReq():
                target = self.members.get(m.target)
                if target is None:
                    return None
                self._remember(m.seq, m.target)
                if isinstance(m, ours.Ping):
                    return codec.Ping(m.seq, target.name, m.src_host, m.src_port, self.name)
                return codec.IndirectPing(
                    m.seq,
                    m.target_host,
                    m.target_port,
                    target.name,
                    m.nack,
                    m.src_host,
                    m.src_port,
                    self.name,
                )
        subject = self.members.get(m.node)
        if subject is None:
            return None
        if m.incarnation > _U32:  # rule 4
            self._drop("unsayable")
            return None
        if isinstance(m, ours.Alive):
            return codec.Alive(
                m.incarnation, subject.name, m.host, m.port, subject.meta, subject.vsn
            )
        accuser = self.members.get(m.src)
        kind = codec.Suspect if isinstance(m, ours.Suspect) else codec.Dead
        return kind(m.incarnation, subject.name, accuser.name if accuser else self.name)

    # ---- push/pull ----------------------------------------------------------------------------

    def states_out(self, entries: Iterable[StateEntry]) -> list[NodeState]:
        out = []
        for e in entries:
            m = self.members.get(e.node)
            if m is None or e.incarnation > _U32:
                continue
            state = _STATE_CODE[e.state]
            out.append(NodeState(m.name, e.host, e.port, m.meta, e.incarnation, state, m.vsn))
        return out

    def states_in(self, states: Iterable[NodeState]) -> list[StateEntry]:
        out = []
        for s in states:
            node = self.id_of(s.name, s.meta)
            if node is None:
                continue
            if s.vsn and node != self.node_id:
                self.members[node].vsn = s.vsn
            state = _CODE_STATE[s.state]
            out.append(StateEntry(node, s.ip, s.port, s.incarnation, state, self._boot_of(node)))
        return out

    def describe(self, node: int) -> dict[str, Any] | None:
        """``name``, ``tags`` and ``rtsim`` of a member, for the API."""
        m = self.members.get(node)
        if m is None:
            return None
        return {"name": m.name, "tags": dict(m.tags), "rtsim": m.rtsim}


def name_id(name: str) -> int:
    """The id a member named ``name`` gets when it is free (rule 1)."""
    return FOREIGN_BASE + zlib.crc32(name.encode()) % _ID_SPAN


def _hinted(text: str) -> int | None:
    """The id an ``rtsim`` tag names: ASCII digits only (``str.isdigit`` also takes digits
    ``int`` refuses, such as ``"²"``), below ``UNKNOWN_PEER``; None for anything else."""
    if not (text.isascii() and text.isdigit()) or len(text) > 10:
        return None
    value = int(text)
    return value if value < UNKNOWN_PEER else None
