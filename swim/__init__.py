"""swim: SWIM membership with Lifeguard (memberlist's variant), sans-IO core plus a trio driver.

Public surface (``import swim``; see docs/architecture.md and docs/membership.md):

- ``SwimConfig``: every setting, memberlist's loopback profile by default.
- ``MemberState``, ``Member``, ``MemberEvent``: the table and its changes.
- ``History``, ``HistoryEntry``, ``HistoryPage``: the numbered ring of a member's changes
  (``SwimHandle.events(after, limit)``, ``SwimHandle.since(member_id)``).
- ``SwimMachine``: the sans-IO state machine (messages and time in, ``Output`` out).
- ``Rtsim``, ``RtsimDoor``: our own wire format, the door the machine's bytes go through
  (``RtsimDoor(machine).receive(data, addr, now)``, ``.send(datagram)``).
- ``open_swim(...)`` -> ``SwimHandle``: the trio driver over UDP and TCP push/pull;
  ``open_swim(..., wire_format=swim.memberlist.Memberlist(name))`` speaks memberlist's
  protocol (Serf's) instead of ours.
- ``Faults``: one member's injected faults (loss, delay, blocks, one-way cuts, its clock:
  ``MAX_CLOCK_OFFSET_S``, ``MIN_CLOCK_RATE``, ``MAX_CLOCK_RATE``).
- ``SimNetwork``: N machines on a deterministic simulated network in virtual time.
- ``send_frame``, ``recv_frame``, ``FrameError``: TCP framing shared with the node RPC.
- ``BadMessage``, ``decode_untrusted``: the one exception for untrusted UDP input.
- ``Keyring``, ``load_keyring``, ``new_key_line``: shared keys that seal gossip (AES-GCM),
  set by ``SwimConfig(keyring_file=...)``; docs/gossip-keys.md.

Errors: ``BadMessage`` (untrusted UDP bytes), ``FrameError`` (untrusted TCP frames) and
``ValueError`` (bad settings) are the only exceptions raised on bad input.
"""

from . import native  # first: the compiled modules or the Python ones (its rule 3)
from .config import SwimConfig
from .driver import SwimHandle, open_swim
from .faults import MAX_CLOCK_OFFSET_S, MAX_CLOCK_RATE, MIN_CLOCK_RATE, Faults
from .framing import FrameError, recv_frame, send_frame, unpack_body
from .history import HISTORY_SIZE, History, HistoryEntry, HistoryPage
from .keyring import Keyring, load_keyring, new_key_line
from .machine import SwimMachine
from .members import Member, MemberEvent, MemberState
from .outputs import Datagram, Output, SwimStatistics, SyncRequest
from .rtsimdoor import Rtsim, RtsimDoor
from .simnet import SimNetwork
from .wire import BadMessage, decode_untrusted

__all__ = [
    "HISTORY_SIZE",
    "MAX_CLOCK_OFFSET_S",
    "MAX_CLOCK_RATE",
    "MIN_CLOCK_RATE",
    "BadMessage",
    "Datagram",
    "Faults",
    "FrameError",
    "History",
    "HistoryEntry",
    "HistoryPage",
    "Keyring",
    "Member",
    "MemberEvent",
    "MemberState",
    "Output",
    "Rtsim",
    "RtsimDoor",
    "SimNetwork",
    "SwimConfig",
    "SwimHandle",
    "SwimMachine",
    "SwimStatistics",
    "SyncRequest",
    "decode_untrusted",
    "load_keyring",
    "native",
    "new_key_line",
    "open_swim",
    "recv_frame",
    "send_frame",
    "unpack_body",
]
