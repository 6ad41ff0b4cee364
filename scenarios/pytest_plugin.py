"""The pytest plugin of rtsim: the ``rt_cluster`` fixture (registered by installing rtsim, entry
point ``pytest11``).

Usage, in an async test (run by pytest-trio: the plugin marks a test that asks for the
fixture ``trio``, so it needs neither ``trio_mode = true`` nor ``@pytest.mark.trio``)::

    async def test_kill(rt_cluster):
        c = await rt_cluster(3)              # mode from --rt-mode (default sim)
        await c.kill(2)
        await c.wait_dead(2)

Rules:
1. The fixture owns every cluster the test opened through it: each is closed at teardown,
   whether the test passed, failed or was cancelled (``Cluster.aclose`` is shielded), last
   opened first.
2. ``--rt-mode`` (``sim``, ``real`` or ``netns``) is the mode of a call that names none, so
   one test body runs in each; ``--rt-seed`` is the seed of a call that gives none, so a
   failure's seed replays it.
3. A failed test's report gains a section ``rt_cluster`` per cluster the test started,
   however it opened it (the fixture, ``open_cluster``, ``start_cluster``: ``play.opened``):
   its mode, its seed, its actions, how to run it again (sim: the same events; real and
   netns: new processes, only the actions and waits are the same), and its artifacts: a
   scenario file that replays it (``rt_cluster scenario FILE``; it holds the test's actions,
   waits and checks, not its plain ``assert``s, and the section says so) and the report
   (``report.html``: the per-observer timeline), written under the test's ``tmp_path`` (or
   pytest's temporary folder, for a test without one) from the history the cluster kept when
   it closed (pytest-trio ends a test's fixtures before its report is made).
4. Real clusters live under the test's ``tmp_path`` with a name unique to the test and the
   pytest-xdist worker (``PYTEST_XDIST_WORKER``) on free ports, netns clusters each on a
   subnet of its own (``realcluster`` rule 6), so workers never clash.
5. The fixture is a plain async fixture run by pytest-trio: the plugin marks every async
   test that asks for it ``trio`` (pytest-trio's own marker, so ``trio_mode`` is not
   needed); without pytest-trio such a test fails at setup with one line that says so. The
   plugin imports nothing of pytest-trio, so it loads wherever rtsim is installed.
7. Loading the plugin costs a pytest session that never opens a cluster next to nothing: the
   clusters, their checks and their reports are imported by the first test that opens one.
6. Once a test opens a real cluster, SIGTERM to pytest (a CI timeout, ``kill``) ends the
   session as Ctrl-C does, so every fixture tears its clusters down; the last resort of
   ``realcluster`` (rule 5) covers what no teardown reached.
8. A test that asked for the fixture or opened a cluster and failed with an exception group
   of one exception (a trio nursery's, pytest-trio's) fails with that exception itself, so
   pytest shows the user's own assertion.
9. ``sim_clock`` is a ``cluster.sim.VirtualClock``: pytest-trio runs a test under any clock
   fixture it takes, so ``rt_cluster(4, whole=True)`` (whole nodes in the simulator) runs in
   virtual time in a test that takes ``sim_clock`` too.
"""

from __future__ import annotations

import inspect
import os
import re
import signal
import threading
from collections.abc import AsyncIterator, Generator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import pytest

from .play.backend import MODES
from .play.opened import watching

if TYPE_CHECKING:
    from swim import SwimConfig

    from .play.chaos import Cluster

__all__ = ["OpenCluster", "graceful_sigterm", "opening", "rt_cluster", "section"]

CLUSTERS = pytest.StashKey["list[Cluster]"]()  # every cluster the test started (rule 3)
FIXTURE = pytest.StashKey["list[Cluster]"]()  # those the fixture opened (rule 2 applies)


class OpenCluster(Protocol):
    """What the ``rt_cluster`` fixture gives a test: ``await rt_cluster(n, mode=None, ...)``."""

    async def __call__(
        self,
        n: int,
        mode: str | None = None,
        *,
        seed: int | None = None,
        swim: SwimConfig | Mapping[str, Any] | None = None,
        whole: bool = False,
    ) -> Cluster: ...


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rtsim", "rtsim clusters (the rt_cluster fixture)")
    group.addoption(
        "--rt-mode",
        choices=MODES,
        default="sim",
        help="mode of rt_cluster(...) calls that name none (default: sim)",
    )
    group.addoption(
        "--rt-seed", type=int, default=None, help="seed of rt_cluster(...) calls that give none"
    )


def _name(request: pytest.FixtureRequest, k: int) -> str:
    """A cluster name unique to this test, this xdist worker and this process (rule 4)."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", request.node.name)[:32].strip("-.") or "test"
    return f"{worker}-{os.getpid()}-{test}-{k}"


def graceful_sigterm() -> None:
    """Rule 6: from now on SIGTERM ends this pytest as Ctrl-C does; where Ctrl-C is ignored
    (a background job), it SIGKILLs the real clusters' processes, then ends pytest as SIGTERM
    would. Only from the main thread, and only over the default handler."""
    if threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    from .play.leftovers import kill_leftovers_now

    installer = os.getpid()

    def on_term(signum: int, frame: object) -> None:
        if os.getpid() != installer:
            # A fork of this pytest (pyroute2 forks to reach a network namespace, and stops
            # the child with SIGTERM): it must die as SIGTERM says, not run on as a pytest.
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            kill_leftovers_now()
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)
        else:
            os.kill(os.getpid(), signal.SIGINT)

    signal.signal(signal.SIGTERM, on_term)


@asynccontextmanager
async def opening(request: pytest.FixtureRequest, tmp: Path) -> AsyncIterator[OpenCluster]:
    """The fixture's body: an opener of clusters under ``tmp``, every one closed on exit."""
    opened = request.node.stash.setdefault(FIXTURE, [])  # closed on exit (rule 1)
    config = request.config

    async def open_one(
        n: int,
        mode: str | None = None,
        *,
        seed: int | None = None,
        swim: SwimConfig | Mapping[str, Any] | None = None,
        whole: bool = False,
    ) -> Cluster:
        from .play.opening import start_cluster  # rule 7: loaded by the first test that opens one

        name = _name(request, len(opened))
        mode = mode or config.getoption("rt_mode")
        if mode != "sim":
            graceful_sigterm()
        c = await start_cluster(
            n,
            mode,
            seed=seed if seed is not None else config.getoption("rt_seed"),
            swim=swim,
            directory=tmp / name,
            name=name,
            whole=whole,
        )
        opened.append(c)
        return c

    import trio

    try:
        yield open_one
    finally:
        with trio.CancelScope(shield=True):
            for c in reversed(opened):
                await c.aclose()


@pytest.fixture
def sim_clock() -> Any:
    """Rule 9: a ``cluster.sim.VirtualClock``; the test that takes it runs in virtual time."""
    from cluster.sim import VirtualClock

    return VirtualClock()


@pytest.fixture
async def rt_cluster(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[OpenCluster]:
    """Opens clusters for a trio test: ``c = await rt_cluster(3, mode="real")``; every one is
    ended at teardown (rule 1)."""
    async with opening(request, tmp_path) as opener:
        yield opener


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Rule 5: an async test that asks for ``rt_cluster`` is a trio test."""
    for item in items:
        is_async = inspect.iscoroutinefunction(getattr(item, "obj", None))
        if _uses_fixture(item) and is_async and item.get_closest_marker("trio") is None:
            item.add_marker(pytest.mark.trio)


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Rule 5: without pytest-trio, one line instead of pytest's own internals."""
    if _uses_fixture(item) and not item.config.pluginmanager.hasplugin("trio"):
        pytest.fail(
            "rt_cluster is an async fixture run by pytest-trio: install it "
            "(pip install pytest-trio, or rtsim[test])",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Generator[None, object, object]:
    """Rule 3: every cluster started during the test, however opened, is the test's."""
    with watching(item.stash.setdefault(CLUSTERS, [])):
        return (yield)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    """Rule 8: a group of one exception out of the test is that exception."""
    try:
        return (yield)
    except BaseExceptionGroup as group:
        leaf = _only_leaf(group)
        if leaf is None or not (_uses_fixture(item) or item.stash.get(CLUSTERS, [])):
            raise
        raise leaf from None


def _uses_fixture(item: pytest.Item) -> bool:
    return "rt_cluster" in getattr(item, "fixturenames", ())


def _only_leaf(exc: BaseException) -> BaseException | None:
    """The one exception inside nested groups of one each; None if there are more."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return None if isinstance(exc, BaseExceptionGroup) else exc


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Rule 3: a failed test's report names each cluster's mode and seed, and how to replay."""
    rep = yield
    clusters = item.stash.get(CLUSTERS, [])
    if rep.failed and clusters and call.when in ("setup", "call"):
        fixture = item.stash.get(FIXTURE, [])
        for k, c in enumerate(clusters):
            lines = _artifacts(c, _folder(item, k), item.nodeid)
            rep.sections.append((f"rt_cluster {k}", section(c, item.nodeid, lines, c in fixture)))
    return rep


def section(c: Cluster, nodeid: str, artifacts: list[str], fixture: bool = True) -> str:
    """Rule 3: the failure section of one cluster: mode, seed, actions, how to run it again.
    ``fixture``: the fixture opened it, so ``--rt-mode`` and ``--rt-seed`` reach it (rule 2);
    a cluster the test opened itself takes its mode and seed from the test's own call."""
    steps = ", ".join(f"{a.step} at +{a.t - c.t0:.2f} s" for a in c.actions) or "none"
    again = f"pytest '{nodeid}' --rt-mode {c.mode} --rt-seed {c.seed}"
    if not fixture:  # the test's own call names its mode; real processes ignore a seed
        own = f", with seed={c.seed} in the test's open_cluster call" if c.mode == "sim" else ""
        again = f"pytest '{nodeid}'{own}"
    if c.mode == "sim":
        again = f"replay: {again} (the same events, one for one)"
    else:  # the seed drives a simulation only: real processes keep their own timing
        again = f"rerun: {again} (new {c.mode} processes, the same test: timing is not replayed)"
    return (
        f"mode {c.mode}, seed {c.seed}, nodes {len(c.initial)} at the start\n"
        f"actions: {steps}\n{again}\n" + "\n".join(artifacts)
    )


def _folder(item: pytest.Item, k: int) -> Path:
    """Rule 3: where the ``k``-th cluster's artifacts go: under the test's ``tmp_path``, or
    a fresh folder of pytest's own temporary one for a test that did not ask for it."""
    tmp = getattr(item, "funcargs", {}).get("tmp_path")
    if isinstance(tmp, Path):
        return tmp / f"rt_cluster-{k}"
    factory: pytest.TempPathFactory = item.config._tmp_path_factory  # type: ignore[attr-defined]
    test = re.sub(r"[^A-Za-z0-9._-]+", "-", item.name)[:32].strip("-.") or "test"
    return factory.mktemp(f"{test}-rt_cluster-{k}", numbered=False)


def _artifacts(c: Cluster, out: Path, name: str) -> list[str]:
    """Rule 3: write the scenario file and the report of a closed cluster; what to say."""
    if not c.closed:  # pytest-trio ends a test's fixtures before its report: not expected
        return ["no scenario file or report: the cluster was still open"]
    from .replay import write_failure

    try:
        return write_failure(c, out, name).lines(c.mode, whole=c.transport is not None)
    except Exception as exc:  # the report must not hide the test's own failure
        return [f"no scenario file or report: {type(exc).__name__}: {exc}"]
