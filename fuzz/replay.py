"""Replaying inputs through their targets in this process (no atheris): the seed corpora, kept
crashes, or any file.

    python -m fuzz.replay NAME FILE...      each file through target NAME; the traceback of
                                            the first that fails, exit 1

The tests (tests/fuzz) replay every seed and every kept crash, so a fixed crash stays fixed.
"""

from __future__ import annotations

import importlib
import sys
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path

from . import CORPUS, CRASHES, TARGETS

__all__ = ["crash_inputs", "one_input", "seed_inputs"]


def one_input(name: str) -> Callable[[bytes], None]:
    """Target ``name``'s ``test_one_input``."""
    module = importlib.import_module(TARGETS[name].module)
    fn: Callable[[bytes], None] = module.test_one_input
    return fn


def _files(folder: Path) -> Iterator[Path]:
    if folder.is_dir():
        yield from sorted(p for p in folder.iterdir() if p.is_file() and p.name[0] != ".")


def seed_inputs(name: str) -> Iterator[Path]:
    """The seed corpus of target ``name``."""
    return _files(CORPUS / name)


def crash_inputs(name: str, root: Path = CRASHES) -> Iterator[Path]:
    """The inputs kept under ``root`` for target ``name`` (crashes, timeouts, out-of-memory)."""
    return _files(root / name)


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[0] not in TARGETS:
        print(f"usage: python -m fuzz.replay {{{','.join(TARGETS)}}} FILE...")
        return 2
    fn = one_input(argv[0])
    for path in map(Path, argv[1:]):
        try:
            fn(path.read_bytes())
        except Exception:
            print(f"{path}: fails")
            traceback.print_exc()
            return 1
        print(f"{path}: passes")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
