"""How a node process (or Serf agent) ended, as its cluster record keeps it (``record``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Ending"]


@dataclass(frozen=True, slots=True)
class Ending:
    """How a node process ended: its exit code or the signal that ended it, and the last line
    of its log. ``at`` is epoch seconds (0 when unknown); ``known`` is False when nobody saw
    it end (its watcher was gone), so the cause is a guess from the log."""

    code: int | None = None
    signal: str = ""  # "SIGKILL", ... ; "" when it exited
    last_line: str = ""
    at: float = 0.0
    known: bool = True

    def describe(self) -> str:
        """``exit code 0``, ``killed by SIGKILL`` or ``ended (cause unknown)``."""
        if self.signal:
            return f"killed by {self.signal}"
        if self.code is not None:
            return f"exit code {self.code}"
        return "ended (cause unknown)"

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Ending:
        code = d.get("code")
        return cls(
            code=code if isinstance(code, int) and not isinstance(code, bool) else None,
            signal=str(d.get("signal") or ""),
            last_line=str(d.get("last_line") or "")[:500],
            at=float(d.get("at") or 0.0),
            known=bool(d.get("known", True)),
        )
