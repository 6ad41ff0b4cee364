"""Fixtures every test room may use: ``harness``, the processes of one test (tests/support)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import Harness, open_harness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    """Processes of this test; every one is ended (and proved gone) at teardown, whatever the
    test did."""
    with open_harness(tmp_path) as h:
        yield h
