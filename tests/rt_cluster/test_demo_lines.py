"""The demo's live lines and mixed clusters in ``list`` (issue 44): a quiet ``--foreground``
watch sums up every ``SUMMARY_EVERY`` seconds (the README's "a live line per node with the
membership it sees"); ``list`` counts a mixed cluster's Serf agents next to its nodes."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from cluster.local import cluster_dir, plan_cluster, save_record
from cluster.rt_cluster import watch
from cluster.rt_cluster.watch import SUMMARY_EVERY, Look, NodeLook, serve_watch, summary
from tests.support.clusters import run_main as run

ALL_ALIVE = ((0, "alive"), (1, "alive"), (2, "alive"))


def _node(i: int, **kw: Any) -> NodeLook:
    base = NodeLook(i, 100 + i, "running", answered=True, leader=0, views=ALL_ALIVE)
    return replace(base, **kw)


def test_the_summary_says_nodes_up_and_what_each_sees_in_short() -> None:
    steady = Look((_node(0), _node(1), _node(2)))
    assert summary(steady) == "3/3 nodes up; 0, 1, 2: 3 alive"
    two = ((0, "alive"), (1, "alive"), (2, "dead"))
    mixed = Look(
        (
            _node(0, views=two),
            _node(1, views=two),
            _node(2, process="gone", answered=False),
            _node(3, process="paused", answered=False),
            _node(4, answered=False, views=None),
        )
    )
    assert summary(mixed) == ("4/5 nodes up; 0, 1: 2 alive; 2: down; 3: paused; 4: not answering")


class _QuietCluster:
    """Stands in for a LocalCluster whose three nodes see each other and never change."""

    def __init__(self) -> None:
        self.record = type("Rec", (), {"nodes": ()})()

    def refresh_states(self) -> None:
        pass


def test_a_quiet_watch_prints_a_summary_every_summary_every_seconds(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    steady = Look((_node(0), _node(1), _node(2)))

    async def fake_look(cluster: object, timeout: float = 1.0) -> Look:
        return steady

    monkeypatch.setattr(watch, "look", fake_look)

    async def main() -> None:
        with trio.move_on_after(2.5 * SUMMARY_EVERY + 0.5):
            await serve_watch(_QuietCluster())  # type: ignore[arg-type]

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    lines = capsys.readouterr().out.splitlines()
    assert SUMMARY_EVERY == 10.0  # the period docs/rt_cluster.md and the README name
    assert len(lines) == 2
    assert all(line.endswith("  3/3 nodes up; 0, 1, 2: 3 alive") for line in lines)


def test_list_counts_a_mixed_clusters_serf_agents_next_to_its_nodes(
    cluster_home: Path, fake_serf: Path
) -> None:
    d = cluster_dir("mix")
    save_record(plan_cluster(d, "mix", 3, serf=2, base_port=0, runtime_base_port=0))
    code, out, _ = run("list")
    assert code == 0
    header, row = out.splitlines()[:2]
    assert header.split()[:3] == ["name", "nodes", "running"]
    assert row.split()[:4] == ["mix", "3+2", "serf", "0"]
