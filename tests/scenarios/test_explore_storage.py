"""``explore --storage``: storage schedules on whole simulated nodes, and the properties that
judge them (``no_lost_writes``, ``array_recovers``, ``forward_bounded``)."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import pytest
import trio

import cluster.node.process
from cluster.node.peers import RpcPeers
from cluster.sim import VirtualClock
from scenarios import open_cluster
from scenarios.explore import Options, Search, play, run_search
from scenarios.explore.playing import scenario_of
from scenarios.explore.storagedraw import RESYNC_S, draw_storage
from scenarios.judge.properties import STORAGE_PROPERTIES
from scenarios.judge.storageprops import array_recovers, forward_bounded
from scenarios.judge.trace import Action, Trace


def test_storage_schedules_are_drawn_from_their_seed_and_bring_every_node_back() -> None:
    for seed in range(300):
        m = draw_storage(seed, Options())
        assert m == draw_storage(seed, Options())
        sc = scenario_of(m)  # the file format takes it
        assert sc.storage is not None
        holders = {*sc.storage.members, *sc.storage.parity}
        lost = {i for s in m["steps"] for k in ("kill", "restart") if (i := s.get(k)) in holders}
        assert len(lost) <= len(sc.storage.parity), m["steps"]  # rule 6: no more than parity
        killed = {s["kill"] for s in m["steps"] if "kill" in s}
        final = m["steps"].index(next(s for s in m["steps"] if s.get("name") == "final"))
        assert killed <= {s["restart"] for s in m["steps"][final:] if "restart" in s} | {
            s["restart"] for s in m["steps"][:final] if "restart" in s
        }
        assert not {"clock", "add"} & {k for s in m["steps"] for k in s}
        owner = sc.storage.array
        assert owner not in {s.get("kill", s.get("restart")) for s in m["steps"]}  # rule 6
        struck = sorted(_member_spans(m["steps"], holders, owner))
        for (_, end, a), (start, _, b) in itertools.pairwise(struck):
            assert a == b or end + RESYNC_S <= start, (seed, m["steps"])  # one at a time
        for step in (s for s in m["steps"] if "partition" in s):
            apart = next(g for g in step["partition"] if owner not in g)
            assert len(holders & set(apart)) <= 1, (seed, step)


def _member_spans(
    steps: list[dict[str, Any]], holders: set[int], owner: int
) -> list[tuple[float, float, int]]:
    """(start, end, member node) of each pause and kill of a member's node (a kill: to the
    end), and of each pause of the owner (which keeps every member away); the spans
    ``storagedraw`` rule 6 keeps apart."""
    spans = []
    for s in steps:
        if s.get("pause") in holders or s.get("pause") == owner:
            spans.append((s["at"], s["at"] + s["for"], s["pause"]))
        elif s.get("kill") in holders:
            spans.append((s["at"], float("inf"), s["kill"]))
    return spans


def test_a_storage_run_plays_the_same_events_twice_and_is_judged_by_the_storage_properties() -> (
    None
):
    mapping = draw_storage(7, Options())
    first = play(mapping, list(STORAGE_PROPERTIES))
    assert first.run.trace is not None
    assert first.run.trace.storage is not None
    assert first.run.trace.storage["checked"] > 0
    assert first.run.trace.forwards  # the array's block calls, every one recorded
    assert first.digest == play(mapping, list(STORAGE_PROPERTIES)).digest


def test_a_short_storage_search_runs_end_to_end(tmp_path: Path) -> None:
    lines: list[str] = []
    search = Search(
        Options(4, 4, storage=True),
        budget_s=None,
        runs=2,
        seed=1,
        out=tmp_path,
        properties=list(STORAGE_PROPERTIES),
    )
    run_search(search, say=lines.append)
    assert any(line.startswith("searched 2 runs") for line in lines), lines


def _trace(forwards: list[dict[str, Any]], end: float = 30.0) -> Trace:
    return Trace("sim", 0.0, end, (0, 1, 2), [], forwards=forwards)


def _call(start: float, end: float | None, outcome: str = "ok") -> dict[str, Any]:
    return {
        "node": 0,
        "start": start,
        "end": end,
        "peer": 2,
        "what": "monitor 'workers'",
        "outcome": outcome,
    }


def test_forward_bounded_holds_within_the_bound_and_names_the_first_call_past_it() -> None:
    assert forward_bounded(_trace([_call(1.0, 1.2), _call(2.0, 7.05, "timeout")])) is None
    why = forward_bounded(_trace([_call(1.0, 1.2), _call(3.0, 12.0, "timeout")]))
    assert why is not None
    assert "node 0's monitor 'workers' to node 2 from +3.00 s took 9.00 s" in why
    why = forward_bounded(_trace([_call(20.0, None)], end=26.0))  # open at the end: its age
    assert why is not None
    assert "still open at the end" in why
    assert forward_bounded(_trace([])) is None


def test_array_recovers_judges_members_that_were_only_away() -> None:
    members = [
        {"pool_name": "rt_m1", "node_id": 1, "state": "active"},
        {"pool_name": "rt_m2", "node_id": 2, "state": "faulty"},
    ]
    storage = {"checked": 1, "lost_count": 0, "array": {"members": members}}
    paused = Trace("sim", 0.0, 40.0, (0, 1, 2), [], storage=storage)
    paused.actions = [Action(5.0, "pause", "pause1", (2,)), Action(15.0, "resume", "r", (2,))]
    assert "rt_m2@2 faulty" in (array_recovers(paused) or "")
    killed = Trace("sim", 0.0, 40.0, (0, 1, 2), [], storage=storage)
    killed.actions = [Action(5.0, "kill", "kill1", (2,)), Action(15.0, "restart", "r", (2,))]
    assert array_recovers(killed) is None  # its RAM device went with its process


def test_array_recovers_requires_the_blocks_of_a_whole_array_to_agree() -> None:
    """A stale parity block (a write that landed after its member's resync) leaves an array
    whose members are all active but whose next member loss would lose a record."""
    members = [{"pool_name": f"rt_m{i}", "node_id": i, "state": "active"} for i in (1, 2, 3)]
    verify = {"slots_checked": 4096, "unreadable_slots": 0, "parity_mismatches": 1}
    array: dict[str, Any] = {"members": members, "verify": verify}
    trace = Trace("sim", 0.0, 40.0, (0, 1, 2, 3), [], storage={"checked": 1, "array": array})
    assert "1 parity mismatches, 0 unreadable slots" in (array_recovers(trace) or "")
    verify["parity_mismatches"] = 0
    assert array_recovers(trace) is None
    verify["parity_mismatches"], members[2]["state"] = 1, "faulty"  # degraded: not judged so
    trace.actions = [Action(5.0, "kill", "kill3", (3,))]  # its device is gone, no spare
    assert array_recovers(trace) is None


def test_a_forward_past_the_bound_fails_forward_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """The property can fail: peers whose bound is 9 s instead of 5 s are caught."""

    class LatePeers(RpcPeers):
        def __init__(self, faults: Any = None, timeout: float = 9.0) -> None:
            super().__init__(faults, timeout)

    async def body(late: bool) -> str | None:
        if late:
            monkeypatch.setattr(cluster.node.process, "RpcPeers", LatePeers)
        async with open_cluster(3, "sim", whole=True, seed=2) as c:
            await c.pause(2)
            await c.http(0, "/api/nodes/2/workers")
            await c.resume(2)
            end = c.backend.now()
            return forward_bounded(_trace(c.backend.forwards(), end))  # type: ignore[attr-defined]

    assert trio.run(body, False, clock=VirtualClock()) is None
    why = trio.run(body, True, clock=VirtualClock())
    assert why is not None
    assert "took 9.00 s" in why


def test_the_storage_example_of_docs_explore_runs(tmp_path: Path) -> None:
    """docs/explore.md, "Storage": its command line, as written (its --out under tmp_path)."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "explore.md").read_text()
    line = next(x for x in doc.splitlines() if x.startswith("$ rt_cluster explore --storage"))
    argv = line.removeprefix("$ rt_cluster ").split()
    argv[argv.index("--out") + 1] = str(tmp_path / "storage-out")
    from scenarios.command import main

    assert main(argv) in (0, 1)  # 1: a violation found (and written), 0: none
    assert (tmp_path / "storage-out").is_dir()
