"""``no_lost_writes``: the durability check of a scenario's array, judged from the trace.

Rules:
1. It passes when at least one record was acknowledged and none reads back different or
   unreadable; when the owner did not answer, nothing can be checked and it fails, saying so.
2. The membership simulator has no arrays (a simulated trace without a storage result):
   ``not_applicable``. Whole simulated nodes have them, judged as real ones.
"""

from __future__ import annotations

from typing import Any

from .trace import Trace

__all__ = ["judge_storage"]


def judge_storage(trace: Trace) -> dict[str, Any]:
    """``no_lost_writes`` over a trace (rules 1 and 2)."""
    if trace.mode == "sim" and trace.storage is None:
        return {
            "status": "not_applicable",
            "measured": None,
            "detail": "no arrays on the simulated network",
        }
    got = trace.storage
    if got is None:
        return {"status": "fail", "measured": None, "detail": "the scenario has no storage"}
    if "error" in got:
        return {"status": "fail", "measured": None, "detail": got["error"]}
    lost, checked = int(got.get("lost_count", 0)), int(got.get("checked", 0))
    detail = f"{checked} acknowledged records read back, {lost} lost"
    if lost:
        first = got["lost"][0]
        detail += f"; first: {first['size']} bytes at {first['offset']}: {first['why']}"
    ok = checked > 0 and lost == 0
    if checked == 0:
        detail = "no write was acknowledged: nothing to check"
    return {"status": "pass" if ok else "fail", "measured": lost, "detail": detail}
