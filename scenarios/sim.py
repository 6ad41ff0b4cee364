"""Run a scenario on swim's simulated network, in virtual time: seeded, socket-free, repeatable.

Rules:
1. Up to ``JOIN_LIMIT`` nodes the cluster joins through its seeds as real nodes do; the start
   is the first virtual moment every node lists every node alive. Above it the cluster starts
   converged (``SimNetwork(bootstrap=True)``: every node knows every other, one shared
   roster), because a join of N nodes costs N^2 table rows and events, hours at 10,000; the
   start is then time 0. ``start="join"`` or ``"bootstrap"`` chooses either way at any size.
2. Steps map one-to-one onto ``SimNetwork`` controls; ``stop`` is a graceful leave; HTTP steps
   are recorded as not applicable (the simulation has no dashboards).
3. Same scenario and seed, same trace: nothing here reads a clock or global randomness.
"""

from __future__ import annotations

from collections.abc import Callable

import swim

from .spec import Scenario, Step
from .trace import Action, Trace

__all__ = ["run_sim"]

JOIN_TIMEOUT = 300.0  # virtual seconds allowed for the initial convergence
JOIN_LIMIT = 100  # rule 1: above this many nodes the simulated cluster starts converged


class SimFailed(Exception):
    """The simulated cluster could not get to the start (it never converged)."""


def _converged(net: swim.SimNetwork) -> bool:
    ids = net.live_ids()
    return all(net.state(i, j) == "alive" for i in ids for j in ids)


def run_sim(
    scenario: Scenario,
    *,
    seed: int | None = None,
    nodes: int | None = None,
    on_action: Callable[[Action, float], None] | None = None,
    start: str = "auto",
) -> Trace:
    """Play ``scenario`` on a SimNetwork; the trace of what happened (virtual seconds).

    ``on_action`` hears each action as it is carried out, with the start (``t0``);
    ``start``: ``"join"``, ``"bootstrap"`` or ``"auto"`` (rule 1)."""
    n = nodes or scenario.nodes
    if start not in ("auto", "join", "bootstrap"):
        raise ValueError(f"start must be auto, join or bootstrap, not {start!r}")
    join = start == "join" or (start == "auto" and n <= JOIN_LIMIT)
    config = swim.SwimConfig.from_mapping(scenario.swim)
    net = swim.SimNetwork(
        n, config, seed=scenario.seed if seed is None else seed, bootstrap=not join
    )
    if join and not net.until(lambda: _converged(net), timeout=JOIN_TIMEOUT, step=0.05):
        raise SimFailed(f"{n} simulated nodes did not converge within {JOIN_TIMEOUT:g}s")
    t0 = net.now
    trace = Trace(
        mode="sim",
        t0=t0,
        end=t0 + scenario.duration,
        initial=tuple(range(n)),
        events=net.events,
        launched=0.0,
        probe_interval=config.probe_interval,
        boots=net.boots,  # filled in as machines are made (restart, add)
    )
    play = _Player(net, trace)
    for step in scenario.steps:
        play.run_to(t0 + step.at)
        done = len(trace.actions)
        play.apply(step)
        if on_action is not None:
            for a in trace.actions[done:]:
                on_action(a, t0)
    play.run_to(trace.end)
    return trace


class _Player:
    """Carries out steps on the network and records them as actions."""

    def __init__(self, net: swim.SimNetwork, trace: Trace) -> None:
        self.net = net
        self.trace = trace
        self.paused: set[int] = set()
        self.resumes: list[tuple[float, int, str]] = []  # timed resumes of ``pause: for``

    def run_to(self, t: float) -> None:
        net = self.net
        while self.resumes and self.resumes[0][0] <= t:
            when, i, name = self.resumes.pop(0)
            net.run_until(when)
            net.resume(i)
            self.paused.discard(i)
            self.trace.actions.append(Action(net.now, "resume", f"{name}:resume", (i,)))
        net.run_until(t)

    def resolve(self, step: Step) -> int:
        if step.target == "leader":
            for i in self.net.live_ids():
                if i not in self.paused and (leader := self.net.leader(i)) is not None:
                    return leader
            raise SimFailed(f"{step.label()}: no live node knows a leader")
        assert isinstance(step.target, int)
        return step.target

    def apply(self, step: Step) -> None:
        net, trace, now, kind = self.net, self.trace, self.net.now, step.kind
        if kind in ("kill", "stop", "pause", "resume", "restart"):
            i = self.resolve(step)
            if kind == "kill":
                net.kill(i)
            elif kind == "stop":
                net.leave(i)
            elif kind == "pause":
                net.pause(i)
                self.paused.add(i)
                if step.duration is not None:
                    self.resumes.append((now + step.duration, i, step.name))
                    self.resumes.sort()
            elif kind == "resume":
                net.resume(i)
                self.paused.discard(i)
            else:
                net.restart(i)
                self.paused.discard(i)
            trace.actions.append(Action(now, kind, step.name, (i,)))
        elif kind == "add":
            ids = tuple(net.add() for _ in range(step.count))
            trace.actions.append(Action(now, kind, step.name, ids))
        elif kind == "partition":
            groups = step.partition_groups(net.ids())
            net.partition(groups)
            trace.actions.append(Action(now, kind, step.name, groups=groups))
        elif kind == "heal":
            net.heal()
            trace.actions.append(Action(now, kind, step.name))
        elif kind in ("loss", "delay"):
            targets = net.live_ids() if step.target == "all" else [int(step.target or 0)]
            for i in targets:
                if kind == "loss":
                    net.set_loss(i, step.value)
                else:
                    net.set_delay(i, step.value)
            trace.actions.append(Action(now, kind, step.name, tuple(targets), value=step.value))
        else:  # http: the simulation has no dashboards
            trace.actions.append(Action(now, "http", step.name, note="not applicable in sim"))
