"""Values pinned in ``tests/pinned/``: what a move of code must leave unchanged.

A change meant to change one of them rewrites it on purpose with ``RT_PIN_UPDATE=1`` (run the
test that checks it), and its commit says what changed and why; the file's diff shows it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

PINNED = Path(__file__).resolve().parents[1] / "pinned"


def check_pinned(name: str, found: Any, *, folder: Path | None = None) -> None:
    """``found`` equals ``tests/pinned/<name>.json`` (or rewrites it under RT_PIN_UPDATE=1)."""
    path = (folder or PINNED) / f"{name}.json"
    if os.environ.get("RT_PIN_UPDATE") == "1":
        path.write_text(json.dumps(found, indent=1, sort_keys=True) + "\n")
    pinned = json.loads(path.read_text())
    assert found == pinned, (
        f"{path.name} differs from what this code does (tests/support/pinned.py)"
    )
