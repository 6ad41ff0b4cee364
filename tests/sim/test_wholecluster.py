"""N whole nodes in one process (cluster.sim): the runtime, the node RPC and SWIM on the
simulated network, in virtual time, the same run for the same seed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from cluster.sim import VirtualClock, WholeCluster, open_whole_cluster

ROOT = Path(__file__).resolve().parents[2]


def run_seed(seed: int, hash_seed: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-m", "tests.sim.history_of_a_seed", str(seed)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return json.loads(out.stdout)  # type: ignore[no-any-return]


def test_the_same_seed_gives_the_same_history_in_two_processes_and_another_seed_another() -> None:
    """Events, forwards' answers, workers' counters and pools, after forwards, a pause, a kill
    and a restart: equal for one seed under two hash seeds; another seed's events differ."""
    for seed in (1, 2):
        first, second = run_seed(seed, "1"), run_seed(seed, "2")
        assert first == second, f"seed {seed} ran two histories"
    assert run_seed(4, "1")["events"] != first["events"]
    assert [a[0] for a in first["answers"]] == [200, 200, 200, 503]
    assert 28 < first["now"] < 30


def in_sim(body: Any, n: int = 4, seed: int = 1) -> Any:
    async def main() -> Any:
        async with open_whole_cluster(n, seed=seed) as c:
            return await body(c)

    return trio.run(main, clock=VirtualClock())


def states(c: WholeCluster, subject: int) -> set[str]:
    return {view[subject] for i in range(len(c.nodes)) if (view := c.views(i)) and i != subject}


def test_a_killed_node_is_declared_dead_and_its_restart_is_taken_back() -> None:
    async def body(c: WholeCluster) -> None:
        await trio.sleep(3)
        assert states(c, 2) == {"alive"}
        c.kill(2)
        assert c.views(2) is None
        await trio.sleep(12)
        assert states(c, 2) == {"dead"}
        node = await c.restart(2)
        await trio.sleep(5)
        assert states(c, 2) == {"alive"}
        assert c.node(2) is node

    in_sim(body)


def test_a_forward_to_a_paused_or_cut_off_peer_answers_within_the_five_second_bound() -> None:
    async def body(c: WholeCluster) -> None:
        await trio.sleep(3)
        c.pause(2)
        t0 = trio.current_time()
        status, answer = await c.request(0, "GET", "/api/nodes/2/workers")
        assert status == 503
        assert "timed out after 5s" in answer["error"]
        assert 5.0 <= trio.current_time() - t0 <= 5.1
        c.resume(2)
        c.net.cut(3, 1)  # node 1 hears nothing from 3: its forward's answer never comes
        t0 = trio.current_time()
        status, _ = await c.request(1, "GET", "/api/nodes/3/workers")
        assert status == 503
        assert 5.0 <= trio.current_time() - t0 <= 5.1
        status, answer = await c.request(0, "GET", "/api/nodes/3/workers")
        assert status == 200
        assert answer["node_id"] == 3

    in_sim(body)


def test_a_clock_fault_is_refused_with_one_line() -> None:
    async def body(c: WholeCluster) -> None:
        try:
            c.node(1).swim.set_clock(60.0, 1.0)
        except ValueError as exc:
            return str(exc)
        raise AssertionError("a clock was set")

    assert "one clock" in in_sim(body, n=2)


def test_a_paused_nodes_dashboard_answers_once_it_is_resumed_or_the_request_times_out() -> None:
    async def body(c: WholeCluster) -> None:
        await trio.sleep(2)
        c.pause(1)
        t0 = trio.current_time()
        with pytest.raises(TimeoutError, match="did not answer"):
            await c.request(1, "GET", "/api/health", timeout=3)
        assert trio.current_time() - t0 == 3

        async def resume_at(t: float) -> None:
            await trio.sleep_until(t)
            c.resume(1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(resume_at, trio.current_time() + 2)
            t0 = trio.current_time()
            status, _ = await c.request(1, "GET", "/api/health", timeout=10)
        assert status == 200
        assert trio.current_time() - t0 == 2

    in_sim(body, n=2)


def test_every_call_to_a_peer_is_recorded_with_how_it_ended() -> None:
    async def body(c: WholeCluster) -> list[dict[str, Any]]:
        await trio.sleep(3)
        await c.request(0, "GET", "/api/nodes/1/workers")  # ok
        c.pause(1)
        await c.request(0, "GET", "/api/nodes/1/workers")  # timeout at 5 s
        c.resume(1)
        c.kill(2)
        await c.request(0, "GET", "/api/nodes/2/workers")  # refused: unreachable
        return [f for f in c.forwards() if f["node"] == 0]

    calls = in_sim(body, n=3)
    assert [(f["peer"], f["outcome"]) for f in calls] == [
        (1, "ok"),
        (1, "timeout"),
        (2, "unreachable"),
    ]
    assert calls[1]["end"] - calls[1]["start"] == 5.0
    assert all(f["what"] == "monitor 'workers'" for f in calls)


def test_a_node_killed_while_it_answers_stops_there_forward_and_all() -> None:
    """``inmemoryhttp`` rule 4: node 0 forwards to paused node 2 (5 s to wait out) and is
    killed 1 s in; the caller hears at once, and node 0's forward ends with it."""

    async def body(c: WholeCluster) -> tuple[float, list[dict[str, Any]]]:
        await trio.sleep(3)
        c.pause(2)
        t0 = trio.current_time()

        async def kill_soon() -> None:
            await trio.sleep(1)
            c.kill(0)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(kill_soon)
            with pytest.raises(LookupError, match="went down while answering"):
                await c.request(0, "GET", "/api/nodes/2/workers")
        took = trio.current_time() - t0
        await trio.sleep(10)  # past the forward's bound: nothing of node 0 runs on
        return took, [f for f in c.forwards() if f["node"] == 0 and f["peer"] == 2]

    took, calls = in_sim(body, n=3)
    assert took == pytest.approx(1.0, abs=0.05)
    assert [f["outcome"] for f in calls] == ["killed"]
    assert calls[0]["end"] - calls[0]["start"] == pytest.approx(1.0, abs=0.05)
