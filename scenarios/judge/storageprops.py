"""The properties of a run with whole simulated nodes and an array (``explore --storage``),
each a function of the run's trace: None when it holds, else one line saying what and when.

- ``no_lost_writes``: every record the array acknowledged reads back byte for byte after the
  run (``durability``), and at least one was acknowledged.
- ``array_recovers``: at the end of the run, when every node holding a member is up (the
  storage schedules bring every node back before the end, ``explore.storagedraw`` rule 4),
  every member that was only away (its node paused, cut off, partitioned, slow) is active
  again: resynchronised. A member whose node was killed, stopped or restarted lost its RAM
  device with its process; only a spare brings it back, so it is judged only when the array
  replaces away members onto spares (``replace_after``, in the run's storage result). An
  array whose members are all active is whole only when its blocks agree too: the owner's
  ``verify`` at the end finds no unreadable slot and no parity mismatch (a stale block, as a
  write that landed after its member's resync leaves, would lose a record at the next loss
  of a member).
- ``forward_bounded``: every call a node made to a peer (a forward, a block operation of the
  array, a compose: ``cluster.node.peers`` rule 3) ended within the one forward bound
  (``FORWARD_TIMEOUT``, 5 s) plus ``SLACK``; a call still open at the end is judged by its age
  then.

Rules:
1. Pure: nothing here runs anything.
2. A run with nothing to judge holds: no storage result (the membership simulator, a file
   without an array), no recorded calls (real processes do not report theirs).
"""

from __future__ import annotations

from typing import Any

from cluster.ground.bounds import FORWARD_TIMEOUT

from .durability import judge_storage
from .trace import Trace

__all__ = ["SLACK", "array_recovers", "forward_bounded", "no_lost_writes"]

# Seconds a call may end past the bound: in virtual time a bounded call ends at its deadline
# exactly; a node's loop may take a few task switches more to record it. A call the bound
# does not cover (a missing timeout) ends much later, or never.
SLACK = 0.1
LOSE_DEVICES = ("kill", "stop", "restart")  # a node's RAM devices end with its process


def no_lost_writes(trace: Trace) -> str | None:
    if trace.storage is None:
        return None
    judged = judge_storage(trace)
    return None if judged["status"] != "fail" else str(judged["detail"])


def array_recovers(trace: Trace) -> str | None:
    array = (trace.storage or {}).get("array")
    if not array:
        return None
    members = array.get("members") or []
    up = set(trace.up_nodes(trace.end))
    if any(m.get("node_id") not in up for m in members):
        return None  # a member's node is down at the end: nothing could bring it back
    lost = set()
    if (trace.storage or {}).get("replace_after") is None:  # no spare: a lost device stays lost
        lost = {n for a in trace.actions if a.kind in LOSE_DEVICES for n in a.nodes}
    out = [m for m in members if m.get("state") != "active" and m.get("node_id") not in lost]
    if not out:
        whole = all(m.get("state") == "active" for m in members)
        return _inconsistent(trace, array.get("verify")) if whole else None
    shown = ", ".join(f"{m.get('pool_name')}@{m.get('node_id')} {m.get('state')}" for m in out)
    return (
        f"the array is not whole at the end (+{trace.end - trace.t0:.1f} s) though every "
        f"member's node is up: {shown} (recovery_state {array.get('recovery_state')})"
    )


def _inconsistent(trace: Trace, verify: dict[str, Any] | None) -> str | None:
    """``array_recovers``: every member active, yet the blocks disagree (the owner's
    ``verify`` at the end: unreadable slots, parity mismatches)."""
    if not verify:
        return None
    unreadable, mismatches = verify.get("unreadable_slots", 0), verify.get("parity_mismatches", 0)
    if not unreadable and not mismatches:
        return None
    return (
        f"the array's members are all active at the end (+{trace.end - trace.t0:.1f} s) but "
        f"its blocks disagree: {mismatches} parity mismatches, {unreadable} unreadable slots "
        "(verify); the next loss of a member would lose records"
    )


def forward_bounded(trace: Trace) -> str | None:
    for f in trace.forwards or []:
        end = trace.end if f["end"] is None else f["end"]
        took = end - f["start"]
        if took > FORWARD_TIMEOUT + SLACK:
            still = " and was still open at the end" if f["end"] is None else ""
            return (
                f"node {f['node']}'s {f['what']} to node {f['peer']} from "
                f"+{f['start'] - trace.t0:.2f} s took {took:.2f} s{still} ({f['outcome']}): "
                f"more than the forward bound {FORWARD_TIMEOUT:g} s"
            )
    return None
