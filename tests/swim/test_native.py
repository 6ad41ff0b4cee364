"""The compiled modules (``swim.native``): used only when built from today's sources, and the
same history as the Python ones, event for event."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import types
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import swim
from swim import machine, native, wire
from swim.table import below

ROOT = Path(__file__).resolve().parents[2]


def _fake_build(tmp_path: Path, sources: str) -> tuple[Path, Path]:
    source, build = tmp_path / "swim", tmp_path / "build"
    source.mkdir()
    build.mkdir()
    (source / "a.py").write_text("x = 1\n")
    (build / "SOURCES").write_text(sources)
    return source, build


def test_a_build_of_todays_sources_goes_first_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RTSIM_PURE", raising=False)
    source, build = _fake_build(tmp_path, "")
    (build / "SOURCES").write_text(native.stamp(source))
    path = [str(source)]
    assert native.use_build(path, build, source)
    assert path == [str(build), str(source)]


def test_a_stale_build_or_rtsim_pure_leaves_the_python_modules(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RTSIM_PURE", raising=False)
    source, build = _fake_build(tmp_path, "")
    (build / "SOURCES").write_text(native.stamp(source))
    (source / "a.py").write_text("x = 2\n")  # edited after the build
    path = [str(source)]
    assert not native.use_build(path, build, source)
    (build / "SOURCES").write_text(native.stamp(source))
    monkeypatch.setenv("RTSIM_PURE", "1")
    assert not native.use_build(path, build, source)
    assert not native.use_build(path, tmp_path / "never-built", source)
    assert path == [str(source)]


def test_the_build_make_made_is_the_one_in_use() -> None:
    """Under ``make`` the build matches the sources, so the machine runs compiled; the modules
    rule 1 keeps in Python are never taken from it."""
    try:
        built = (native.BUILD / "SOURCES").read_text() == native.stamp()
    except OSError:
        built = False
    if not built or os.environ.get("RTSIM_PURE"):
        pytest.skip("no build of today's sources (make builds one)")
    assert swim.native.IN_USE
    assert Path(machine.__file__).parent == native.BUILD
    assert Path(wire.__file__).parent == native.SOURCE  # a door: rule 1 keeps it Python


def test_the_python_modules_play_the_pinned_histories() -> None:
    """The library's sim digests and the search's forty runs, played by the Python modules in
    a process of their own (this process may run the compiled ones: ``tests/test_pinned.py``
    holds those to the same pins)."""
    script = (
        "import swim, tests.test_pinned as p\n"
        "from tests.support.pinned import check_pinned\n"
        "assert not swim.native.IN_USE\n"
        "check_pinned('sim_digests', p.sim_digests())\n"
        "check_pinned('explore_digests', p.explore_digests())\n"
    )
    env = {**os.environ, "RTSIM_PURE": "1"}
    env.pop("RT_PIN_UPDATE", None)
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-3000:]


@given(seed=st.integers(0, 2**64), n=st.integers(1, 2**40))
def test_below_draws_what_randrange_draws(seed: int, n: int) -> None:
    """``table.below`` stands in for ``randrange`` on the simulator's path: the same numbers,
    and the generator left in the same state."""
    a, b = random.Random(seed), random.Random(seed)
    assert [below(a, n) for _ in range(4)] == [b.randrange(n) for _ in range(4)]
    assert a.random() == b.random()


def test_the_records_made_on_every_event_construct_compiled() -> None:
    """Rule 4: in the build, their ``__init__`` is machine code, not a Python function (a
    dataclass's generated one would be, at about seven times the cost)."""
    if not swim.native.IN_USE:
        pytest.skip("no build of today's sources (make builds one)")
    from swim.messages import Ack, Alive, Dead, Ping, Suspect
    from swim.outputs import Datagram, Output
    from swim.simnodes import Unsealed
    from swim.table import Entry

    records = (Ack, Alive, Dead, Ping, Suspect, Datagram, Output, Unsealed, Entry)
    interpreted = [c.__name__ for c in records if isinstance(c.__init__, types.FunctionType)]
    assert not interpreted
