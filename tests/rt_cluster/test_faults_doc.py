"""docs/rt_cluster.md's example of one-way cuts, clocks and disk faults cannot rot: its
``console`` block is run here as it stands, line by line, on a real cluster of 3 nodes (the
default cluster of a private home): each ``$ rt_cluster ...`` command, then the lines the doc
shows after it, each found in what the command printed (``...`` stands for anything)."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.support.clusters import rt_cluster, up_argv

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "rt_cluster.md"
BLOCK = re.compile(r"^```console\n(.*?)^```", re.DOTALL | re.MULTILINE)


def _steps() -> list[tuple[list[str], list[str]]]:
    """The example's commands (argv after ``rt_cluster``) and the lines shown after each."""
    (block,) = [b for b in BLOCK.findall(DOC.read_text()) if "$ rt_cluster cut" in b]
    steps: list[tuple[list[str], list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ rt_cluster "):
            steps.append((shlex.split(line.removeprefix("$ rt_cluster ")), []))
        elif line.strip():
            steps[-1][1].append(line)
    return steps


def _shown(expected: str) -> re.Pattern[str]:
    parts = [re.escape(p) for p in expected.split("...")]
    return re.compile("^" + ".*".join(parts) + "$", re.MULTILINE)


def test_the_example_shows_each_new_fault_and_its_refusals() -> None:
    commands = [argv[0] for argv, _ in _steps()]
    for name in ("cut", "clock", "disk", "heal", "restart", "status"):
        assert name in commands, name


@pytest.mark.slow
def test_the_faults_example_runs_as_the_doc_shows(cluster_home: Path, tmp_path: Path) -> None:
    config = tmp_path / "node.yaml"
    config.write_text("workload: {enabled: false}\nswim: {probe_interval: 0.5}\n")
    res = rt_cluster(*up_argv("default", 3, config))
    assert res.returncode == 0, res.stdout + res.stderr
    try:
        for argv, lines in _steps():
            res = rt_cluster(*argv)
            said = res.stdout + res.stderr
            refused = any(line.startswith("rt_cluster") for line in lines)
            assert res.returncode == (2 if refused else 0), (argv, said)
            for line in lines:
                assert _shown(line).search(said), (argv, line, said)
            if refused:
                assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    finally:
        res = rt_cluster("down")
    assert res.returncode == 0, res.stderr
