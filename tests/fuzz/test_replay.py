"""Every seed and every kept crash through its target, in this process (fast; no atheris).

A kept crash (``fuzz/crashes/<name>/``) is the input that once broke a parser: replaying it is
that defect's regression test. Seeds named ``ok-*`` must still be accepted and ``edge-*`` still
refused, so a format that changes cannot leave its fuzzer starting from the wrong inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from fuzz import CRASHES, TARGETS
from fuzz.__main__ import main
from fuzz.replay import crash_inputs, one_input, seed_inputs

KEPT = [p for name in TARGETS for p in crash_inputs(name)]


@pytest.mark.parametrize("name", list(TARGETS))
def test_every_seed_replays_with_its_verdict(name: str) -> None:
    fn = one_input(name)
    files = list(seed_inputs(name))
    assert any(p.name.startswith("ok-") for p in files), f"no ok-* seed for {name}"
    assert any(p.name.startswith("edge-") for p in files), f"no edge-* seed for {name}"
    wrong = []
    for path in files:
        accepted = fn(path.read_bytes())
        if path.name.startswith("ok-") and not accepted:
            wrong.append(f"{path} is refused (run python -m fuzz.seeds after a format change)")
        if path.name.startswith("edge-") and accepted:
            wrong.append(f"{path} is accepted")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("path", KEPT, ids=lambda p: f"{p.parent.name}/{p.name[:20]}")
def test_every_kept_crash_stays_fixed(path: Path) -> None:
    one_input(path.parent.name)(path.read_bytes())


def test_kept_crashes_belong_to_targets() -> None:
    folders = [p.name for p in CRASHES.iterdir() if p.is_dir()] if CRASHES.is_dir() else []
    assert set(folders) <= set(TARGETS), folders
    assert KEPT, "the regression inputs of fuzz/crashes/ are gone"


def test_the_command_line_refuses_what_it_cannot_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["no_such_target"]) == 2
    assert "no target 'no_such_target'" in capsys.readouterr().err
    assert main(["wire", "--seconds", "0"]) == 2
    assert "at least 1" in capsys.readouterr().err
    assert main(["list"]) == 0
    listed = capsys.readouterr().out.split("\n")
    assert [line.split()[0] for line in listed if line] == list(TARGETS)
