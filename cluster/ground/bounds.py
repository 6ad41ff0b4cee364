"""The one bound on a forward: every call a node makes to a peer is timed by it (the peers own
it: ``cluster.runtime.peers`` rule 2), and ``forward_bounded`` holds the record of calls to it
(``scenarios.judge.storageprops``). Here, on the ground floor, both read the one number."""

from __future__ import annotations

__all__ = ["FORWARD_TIMEOUT"]

FORWARD_TIMEOUT = 5.0  # seconds: the bound on every forward
