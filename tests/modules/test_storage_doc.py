"""docs/storage.md cannot rot: every ``python`` block in it is a test, run here as it stands
on real processes (its disk-fault example among them)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

DOC = Path(__file__).resolve().parents[2] / "docs" / "storage.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _tests() -> list[tuple[str, Any]]:
    found = []
    for code in BLOCK.findall(DOC.read_text()):
        space: dict[str, Any] = {}
        exec(compile(code, str(DOC), "exec"), space)
        found += [(name, fn) for name, fn in space.items() if name.startswith("test_")]
    return found


def test_the_page_has_its_disk_fault_example() -> None:
    assert "test_a_member_whose_disk_fails_loses_no_acknowledged_write" in dict(_tests())


@pytest.mark.parametrize(("name", "test"), _tests(), ids=[n for n, _ in _tests()])
async def test_every_python_block_of_the_page_passes(name: str, test: Any) -> None:
    await test()
