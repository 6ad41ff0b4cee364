"""docs/testing.md cannot rot: every ``python`` block in it is a test module, run here as it
stands (in sim mode, through the installed plugin), its kill and partition tests in real and
netns mode too (a user's file written from the page runs in every mode), and the README points
at the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cluster.local.netns import privileged

pytest_plugins = ("pytester",)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testing.md"
BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _blocks() -> list[str]:
    return BLOCK.findall(DOC.read_text())


def test_the_doc_has_its_worked_examples() -> None:
    text = "\n".join(_blocks())
    assert len(_blocks()) >= 4
    for name in ("kill", "partition", "1000_seeds", "replays", "acknowledged_write", "whole_sim"):
        assert re.search(rf"async def test_\w*{name}", text), name


def test_every_python_block_of_the_doc_passes(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    blocks = _blocks()
    for k, code in enumerate(blocks):
        pytester.makepyfile(**{f"test_doc_{k}": code})
    tests = sum(len(re.findall(r"^async def test_", code, re.MULTILINE)) for code in blocks)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rt-mode", "sim")
    result.assert_outcomes(passed=tests)


@pytest.mark.slow
@pytest.mark.parametrize(
    "mode",
    [
        "real",
        pytest.param(
            "netns", marks=pytest.mark.skipif(not privileged(), reason="namespaces need root")
        ),
    ],
)
def test_the_kill_and_partition_tests_pass_on_real_processes(
    pytester: pytest.Pytester, mode: str
) -> None:
    pytester.makeini("[pytest]\ntrio_mode = true\n")
    names = ("test_a_killed_node_is_seen_dead", "test_a_partition_heals")
    chosen = [code for code in _blocks() if any(f"async def {n}(" in code for n in names)]
    assert len(chosen) == 2
    for k, code in enumerate(chosen):
        pytester.makepyfile(**{f"test_doc_{k}": code})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rt-mode", mode)
    result.assert_outcomes(passed=2)
    assert f"mode {mode}" not in result.stdout.str()  # no failure section


def test_the_readme_points_at_the_doc() -> None:
    using = (ROOT / "README.md").read_text().split("## Using it", 1)[1].split("\n## ", 1)[0]
    assert "[docs/testing.md](docs/testing.md)" in using
