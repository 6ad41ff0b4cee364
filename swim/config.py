"""SwimConfig: every knob of the membership protocol, in seconds where it is a duration.

Rules:
1. Defaults are hashicorp/memberlist's loopback ("Local") profile; ``SwimConfig.lan()`` gives the
   LAN profile Serf uses by default, so the two can be compared at equal settings.
2. ``SwimConfig.from_mapping(d)`` builds a config from the node's ``swim:`` settings section and
   raises ``ValueError`` naming the key for an unknown key, a wrong type or a value out of range.
3. The record is frozen: a running machine never sees its settings change.
4. ``keyring_file`` is read once, when the record is built (``keyring.load_keyring``): a bad
   file fails the settings with a ``ValueError`` naming the file and the line, and the loaded
   ``keyring`` travels with the record (never compared, never shown).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from .keyring import Keyring, load_keyring

__all__ = ["WIRES", "SwimConfig"]

WIRES = ("swim", "memberlist")


@dataclass(frozen=True, slots=True)
class SwimConfig:
    """Settings of one SWIM member (durations in seconds).

    Attributes:
        probe_interval: protocol period T: one member is probed per period.
        probe_timeout: how long to wait for the direct ack before asking helpers.
        indirect_checks: k, the number of helpers asked to ping an unresponsive member.
        suspicion_mult: scales the minimum suspicion timeout (and gives K = mult - 2
            independent confirmations that shorten it down to that minimum).
        suspicion_max_timeout_mult: maximum suspicion timeout as a multiple of the minimum.
        retransmit_mult: each update is piggybacked retransmit_mult * ceil(log10(N + 1)) times.
        gossip_interval: period of the gossip tick that sends queued updates.
        gossip_nodes: members sent to on each gossip tick.
        pushpull_interval: period of the full-state TCP exchange with one random member
            (0 disables it; scaled up for clusters above 32 members, as memberlist does).
        gossip_to_the_dead_time: how long dead members still receive gossip, so they can refute.
        rejoin_interval: period of the re-join to seeds that are not known alive (heals
            partitions that outlived gossip_to_the_dead_time; 0 disables it).
        awareness_max: Lifeguard local health multiplier cap: intervals scale by 1..awareness_max.
        max_packet_bytes: cap on an outgoing UDP packet and on an accepted incoming one.
        tcp_timeout: deadline of one TCP join or push/pull exchange.
        max_frame_bytes: cap on one TCP frame (push/pull state) accepted from a peer.
        leave_propagate_time: how long ``leave()`` keeps gossiping the departure.
        max_members: cap on the member table, self included: at the cap a new member is
            refused unless one held down longer than gossip_to_the_dead_time makes room
            (``newcomers`` rule 2).
        new_members_per_period: previously unknown members learned per protocol period from
            gossip and push/pull; the rest are refused until the next period (``newcomers``
            rule 1).
        keyring_file: path of the shared keys that seal every UDP packet and TCP exchange
            (AES-GCM; one base64 key per line, the first seals; docs/gossip-keys.md), or
            None for plain gossip. Members with and without keys do not form a cluster.
        keyring: the keys read from ``keyring_file`` (derived; not a setting).
        wire: ``swim`` (rtsim's own protocol) or ``memberlist`` (hashicorp/memberlist's, as
            Serf speaks it: ``swim.memberlist``; a node then takes memberlist's LAN profile
            for every timing not set).
    """

    probe_interval: float = 1.0
    probe_timeout: float = 0.2
    indirect_checks: int = 1
    suspicion_mult: int = 3
    suspicion_max_timeout_mult: int = 6
    retransmit_mult: int = 2
    gossip_interval: float = 0.1
    gossip_nodes: int = 3
    pushpull_interval: float = 15.0
    gossip_to_the_dead_time: float = 15.0
    rejoin_interval: float = 20.0
    awareness_max: int = 8
    max_packet_bytes: int = 1400
    tcp_timeout: float = 5.0
    max_frame_bytes: int = 8 * 1024 * 1024
    leave_propagate_time: float = 0.5
    max_members: int = 65536
    new_members_per_period: int = 64
    keyring_file: str | None = None
    keyring: Keyring | None = field(default=None, init=False, repr=False, compare=False)
    wire: str = "swim"

    def __post_init__(self) -> None:
        for f in fields(self):
            if f.init:
                _check(f.name, getattr(self, f.name), f.type)
        path = self.keyring_file
        if path is not None:
            if isinstance(path, os.PathLike):
                path = os.fspath(path)
                object.__setattr__(self, "keyring_file", path)
            if not isinstance(path, str) or not path:
                raise ValueError(f"swim setting 'keyring_file' must be a path, not {path!r:.60}")
            object.__setattr__(self, "keyring", load_keyring(path))
        if self.wire not in WIRES:
            raise ValueError(
                f"swim setting 'wire' must be one of {', '.join(WIRES)}, not {self.wire!r:.40}"
            )
        if self.probe_timeout > self.probe_interval:
            raise ValueError("swim setting 'probe_timeout' must not exceed 'probe_interval'")
        if self.suspicion_mult < 1:
            raise ValueError("swim setting 'suspicion_mult' must be >= 1")
        if self.suspicion_max_timeout_mult < 1:
            raise ValueError("swim setting 'suspicion_max_timeout_mult' must be >= 1")
        if self.awareness_max < 1:
            raise ValueError("swim setting 'awareness_max' must be >= 1")
        if self.max_members < 2:
            raise ValueError("swim setting 'max_members' must be >= 2")
        if self.new_members_per_period < 1:
            raise ValueError("swim setting 'new_members_per_period' must be >= 1")
        if self.max_packet_bytes < 512 or self.max_packet_bytes > 65507:
            raise ValueError("swim setting 'max_packet_bytes' must be in 512..65507")

    @classmethod
    def local(cls, **overrides: Any) -> SwimConfig:
        """memberlist's loopback profile (the defaults), with keyword overrides."""
        return cls(**overrides)

    @classmethod
    def lan(cls, **overrides: Any) -> SwimConfig:
        """memberlist's LAN profile (Serf's default), with keyword overrides."""
        base: dict[str, Any] = {
            "probe_interval": 1.0,
            "probe_timeout": 0.5,
            "indirect_checks": 3,
            "suspicion_mult": 4,
            "suspicion_max_timeout_mult": 6,
            "retransmit_mult": 4,
            "gossip_interval": 0.2,
            "gossip_nodes": 3,
            "pushpull_interval": 30.0,
            "gossip_to_the_dead_time": 30.0,
        }
        base.update(overrides)
        return cls(**base)

    @classmethod
    def from_mapping(cls, d: Mapping[str, Any]) -> SwimConfig:
        """Build from a settings mapping; ValueError names an unknown key or a bad value."""
        if not isinstance(d, Mapping):
            raise ValueError(f"swim settings must be a mapping, not {type(d).__name__}")
        known = {f.name for f in fields(cls) if f.init}
        for key in d:
            if key not in known:
                raise ValueError(
                    f"unknown swim setting {key!r} (known: {', '.join(sorted(known))})"
                )
        return cls(**dict(d))

    def as_dict(self) -> dict[str, Any]:
        """The settings as a plain mapping (round-trips through ``from_mapping``)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.init}


def _check(name: str, value: Any, kind: Any) -> None:
    kind = kind if isinstance(kind, str) else kind.__name__
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            raise ValueError(f"swim setting {name!r} must be an integer, not {value!r}")
        if value < 0:
            raise ValueError(f"swim setting {name!r} must be >= 0, not {value}")
    elif kind == "float":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValueError(f"swim setting {name!r} must be a number of seconds, not {value!r}")
        if not _finite(value) or value < 0:
            raise ValueError(f"swim setting {name!r} must be finite and >= 0, not {value}")
    if name in {"probe_interval", "probe_timeout", "gossip_interval", "tcp_timeout"} and (
        value <= 0
    ):
        raise ValueError(f"swim setting {name!r} must be > 0, not {value}")


def _finite(value: float) -> bool:
    """Finite as a float: an int too large for one is not (``math.isfinite`` would raise)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
