"""The tally of the hostile-input suite: per class of input, how many were sent, what each got,
and which inputs failed (and how); written as JSON and printed as a table at the session's end.

Rules:
1. A class is named ``<door>.<kind>`` (``http.path``, ``udp.random``, ``tcp.idle``...). Every
   input sent is recorded once, with its answer's label: an HTTP status (``"400"``) or an
   outcome (``timeout``, ``closed``, ``dropped``, ``err-reply 400``...).
2. A failed input is recorded with what went wrong; failures are grouped by that text, each
   group keeping its count and a few example inputs, so the JSON stays readable.
3. ``notes`` hold measured figures of a class (health latencies, counter deltas, RSS).
4. The tally is data only: the tests decide what fails; nothing here asserts.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["ClassTally", "Tally"]

EXAMPLES = 40  # example inputs kept per failure group
MAX_INPUT = 160  # characters of an input kept in the tally


def shorten(text: str, limit: int = MAX_INPUT) -> str:
    return text if len(text) <= limit else f"{text[: limit - 20]}...({len(text)} chars)"


@dataclass
class ClassTally:
    """One class of hostile input."""

    sent: int = 0
    answers: Counter[str] = field(default_factory=Counter)
    failures: dict[str, list[str]] = field(default_factory=dict)  # what -> example inputs
    failure_counts: Counter[str] = field(default_factory=Counter)
    notes: dict[str, Any] = field(default_factory=dict)

    def record(self, label: str, what_input: str, failure: str | None = None) -> None:
        """One input sent and the label of what it got; ``failure`` says what went wrong."""
        self.sent += 1
        self.answers[label] += 1
        if failure is not None:
            self.fail(failure, what_input)

    def fail(self, failure: str, what_input: str) -> None:
        """A failure not tied to one more input (e.g. an invariant after the class)."""
        failure = shorten(failure, 600)
        self.failure_counts[failure] += 1
        examples = self.failures.setdefault(failure, [])
        if len(examples) < EXAMPLES:
            examples.append(shorten(what_input))

    @property
    def failed(self) -> int:
        return sum(self.failure_counts.values())

    def problems(self) -> list[str]:
        """One line per failure group, for an assertion message."""
        return [
            f"{what} (x{self.failure_counts[what]}), e.g. {examples[:8]}"
            for what, examples in self.failures.items()
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "sent": self.sent,
            "answers": dict(sorted(self.answers.items())),
            "failed": self.failed,
            "failures": [
                {"what": what, "count": self.failure_counts[what], "examples": examples}
                for what, examples in self.failures.items()
            ],
            "notes": self.notes,
        }


@dataclass
class Tally:
    """Every class of the session, in the order first used."""

    classes: dict[str, ClassTally] = field(default_factory=dict)

    def __getitem__(self, name: str) -> ClassTally:
        return self.classes.setdefault(name, ClassTally())

    def to_json(self, wall_s: float) -> dict[str, Any]:
        return {
            "wall_s": round(wall_s, 1),
            "sent": sum(c.sent for c in self.classes.values()),
            "failed": sum(c.failed for c in self.classes.values()),
            "classes": {name: c.to_json() for name, c in self.classes.items()},
        }

    def write(self, path: Path, wall_s: float) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.to_json(wall_s), indent=1, default=str) + "\n")

    def table(self) -> list[str]:
        """The summary: one line per class (sent, failed, the answers by label)."""
        lines = [f"{'class':<22} {'sent':>6} {'failed':>6}  answers"]
        for name, c in self.classes.items():
            answers = ", ".join(f"{k}: {v}" for k, v in sorted(c.answers.items()))
            lines.append(f"{name:<22} {c.sent:>6} {c.failed:>6}  {answers}")
        total = sum(c.sent for c in self.classes.values())
        failed = sum(c.failed for c in self.classes.values())
        lines.append(f"{'total':<22} {total:>6} {failed:>6}")
        return lines
