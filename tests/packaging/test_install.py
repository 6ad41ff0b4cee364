"""The installed copy: a wheel built from the source and installed (not editable) with its
dependencies into a fresh venv, ``pipx install .``, and ``pip install --user``. Their nodes
serve every page from ``<prefix>/share/rt/viz`` and ``rt_cluster`` works from a directory
that has nothing to do with the repository.

Rules:
1. Nothing may come from the checkout: installed commands run with no PYTHON* variable, a HOME
   of their own, from a working directory holding a ``cluster/`` package that fails when
   imported. Every mount a node logs must be under the install's prefix (a node that imported
   the checkout's code would mount the checkout's ``viz/``), and ``/`` must carry a marker
   written into the installed copy only.
2. Every asset a page references (``script src``, ``link href``, JS imports, transitively)
   answers 200 with the bytes of the source's file.
3. One source copy, wheel and venv per module (building and installing take ~10 s). Every
   process is ended by pid or process group, also when a test fails: nodes through the
   harness, a cluster's processes from its record and from who holds its files.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from collections.abc import Iterable, Iterator, Mapping
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx
import pytest

from cluster.local import (
    free_port,
    process_state,
    read_record,
)
from tests.support import Harness, open_harness
from tests.support.clusters import end_everything

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NOT_SOURCE = (".git", ".venv", "build", "*.egg-info", ".*_cache", ".hypothesis", "__pycache__")
NOT_SOURCE += ("tests", "bench")  # not in the wheel; skipped to keep the copy small
MARKER = "<!-- rtsim test: the installed copy -->"  # added to the installed rt_admin/index.html
ADMIN_INDEX = "/viz/rt_admin/index.html"
MOUNTED = r"Viz: mounted (\S+) assets at \S+ \(from (.+)\)"
MODULES = ("common", "rt_admin", "rt_bdev", "rt_safe_bdev", "rt_cte_core")
POISON = "raise ImportError('imported the working directory\\'s cluster/, not the installed one')\n"


def run(
    argv: Iterable[str | Path], *, cwd: Path, env: Mapping[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    """Run a command to its end; AssertionError with its output unless it succeeded."""
    argv = [str(a) for a in argv]
    done = subprocess.run(
        argv, cwd=cwd, env=dict(env), capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        raise AssertionError(
            f"{' '.join(argv)} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done


def bare_env(home: Path, **extra: str) -> dict[str, str]:
    """Our environment without RT_* and PYTHON* variables, HOME ``home``, plus ``extra``."""
    ours = {k: v for k, v in os.environ.items() if not k.startswith(("RT_", "PYTHON"))}
    ours.pop("VIRTUAL_ENV", None)
    home.mkdir(parents=True, exist_ok=True)
    return {**ours, "HOME": str(home), "PYTHONUNBUFFERED": "1", **extra}


# ---- the installs, shared by the module ----------------------------------------------------


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with ``src/`` (a copy of the source, so building leaves the checkout alone)
    and ``dist/`` (the wheel built from it)."""
    top = tmp_path_factory.mktemp("built")
    shutil.copytree(ROOT, top / "src", ignore=shutil.ignore_patterns(*NOT_SOURCE))
    run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", top / "dist", "."],
        cwd=top / "src",
        env=os.environ,
    )
    return top


@pytest.fixture(scope="module")
def wheel(built: Path) -> Path:
    (found,) = (built / "dist").glob("rtsim-*.whl")
    return found


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel and its dependencies (from the index) installed."""
    where = tmp_path_factory.mktemp("venv") / "venv"
    run([sys.executable, "-m", "venv", where], cwd=where.parent, env=os.environ)
    run([where / "bin" / "pip", "install", "-q", wheel], cwd=where.parent, env=os.environ)
    mark_installed_copy(where)
    return where


@pytest.fixture(scope="module")
def elsewhere(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A working directory away from the repository, with a ``cluster/`` package that fails
    when imported (so a child that searches the working directory first is caught)."""
    where = tmp_path_factory.mktemp("elsewhere")
    (where / "cluster").mkdir()
    (where / "cluster" / "__init__.py").write_text(POISON)
    return where


def mark_installed_copy(prefix: Path) -> None:
    index = prefix / "share" / "rt" / "viz" / "rt_admin" / "index.html"
    if MARKER not in index.read_text():
        index.write_text(index.read_text() + MARKER + "\n")


# ---- crawling a node's pages ---------------------------------------------------------------


class _Refs(HTMLParser):
    """The URLs of a page's scripts, style sheets and images."""

    def __init__(self) -> None:
        super().__init__()
        self.refs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        wanted = {"script": "src", "link": "href", "img": "src"}.get(tag)
        self.refs += [v for k, v in attrs if k == wanted and v]


# import/export ... from '<url>', import '<url>', import('<url>')
_JS_IMPORT = re.compile(
    r"""\b(?:import|export)\s*\(?\s*(?:[\w*{}\s,$]*?\sfrom\s*)?['"]([^'"\n]+)['"]"""
)


def references(url: str, content_type: str, text: str) -> list[str]:
    """The same-origin paths a page or script at ``url`` loads."""
    if content_type.startswith("text/html"):
        parser = _Refs()
        parser.feed(text)
        refs = parser.refs
    elif content_type.startswith("text/javascript"):
        refs = _JS_IMPORT.findall(text)
    else:
        refs = []
    return [urljoin(url, r) for r in refs if not urlsplit(r).scheme and not urlsplit(r).netloc]


def crawl(base: str, pages: Iterable[str]) -> dict[str, tuple[int, bytes]]:
    """Status and body of every page and of everything it loads, transitively."""
    seen: dict[str, tuple[int, bytes]] = {}
    todo = list(pages)
    with httpx.Client(base_url=base, timeout=10.0) as client:
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            r = client.get(path)
            seen[path] = (r.status_code, r.content)
            if r.status_code == 200:
                todo += references(path, r.headers.get("content-type", ""), r.text)
    return seen


def spec_pages() -> list[str]:
    admin = sorted(f"/viz/rt_admin/{p.name}" for p in (ROOT / "viz" / "rt_admin").glob("*.html"))
    return ["/", "/views", *admin, "/viz/rt_bdev/", "/viz/rt_safe_bdev/", "/viz/rt_cte_core/"]


def check_pages(base: str) -> None:
    """Rule 2, and ``/`` is the installed copy's (the marker)."""
    seen = crawl(base, spec_pages())
    bad = {path: status for path, (status, _) in seen.items() if status != 200}
    assert not bad, f"not 200: {bad}"
    # the crawl followed links and imports: index.html -> cluster.js -> app.js -> dom.js
    followed = {"/viz/common/app.css", "/viz/rt_admin/cluster.js", "/viz/common/app.js"}
    followed |= {"/viz/common/dom.js", "/viz/rt_bdev/bdev.js", "/viz/rt_safe_bdev/safe_bdev.js"}
    assert followed <= set(seen), sorted(seen)
    assert MARKER.encode() in seen["/"][1]
    for path, (_, body) in seen.items():
        parts = path.split("/")  # "", "viz", mod, file
        if len(parts) == 4 and parts[1] == "viz" and parts[3] and path != ADMIN_INDEX:
            assert body == (ROOT / "viz" / parts[2] / parts[3]).read_bytes(), path


def start_installed_node(h: Harness, bindir: Path, cwd: Path, name: str) -> str:
    """``<bindir>/rt_run start`` from ``cwd`` with a bare environment; its dashboard's URL."""
    h.env = bare_env(h.workdir / f"{name}.home")
    env_cmd = shutil.which("env")
    assert env_cmd is not None
    port = free_port()
    argv = [env_cmd, "-C", str(cwd), str(bindir / "rt_run"), "start", "--port", str(port)]
    node = h.start([*argv, "--viz-port", "0"], name, port=port)
    return h.dashboard_url(node, timeout=60)


def mounts(h: Harness, name: str) -> dict[str, Path]:
    text = (h.workdir / f"{name}.log").read_text(errors="replace")
    return {mod: Path(folder) for mod, folder in re.findall(MOUNTED, text)}


# ---- the tests -----------------------------------------------------------------------------


def test_a_node_from_the_wheel_serves_every_page_from_its_prefix(
    venv: Path, elsewhere: Path, tmp_path: Path
) -> None:
    code = "import cluster, dashboard, swim; from scenarios.runner import library\n"
    code += "print(cluster.__file__); print(*sorted(p.name for p in library()))"
    env = bare_env(tmp_path / "home")
    out = run([venv / "bin" / "python", "-P", "-c", code], cwd=elsewhere, env=env).stdout
    where, scenarios = out.splitlines()
    assert Path(where).is_relative_to(venv / "lib"), where
    assert scenarios.split() == sorted(p.name for p in (ROOT / "scenarios").glob("*.yaml"))
    with open_harness(tmp_path) as h:
        base = start_installed_node(h, venv / "bin", elsewhere, "node")
        found = mounts(h, "node")
        assert set(found) == set(MODULES), found
        for mod, folder in found.items():
            assert folder == venv / "share" / "rt" / "viz" / mod, (mod, folder)
        check_pages(base)


@pytest.fixture
def cluster_home(tmp_path: Path) -> Iterator[Path]:
    home = tmp_path / "clusters"
    home.mkdir()
    try:
        yield home
    finally:
        end_everything(home)


def test_rt_cluster_up_and_down_from_the_venv_elsewhere(
    venv: Path, elsewhere: Path, cluster_home: Path, tmp_path: Path
) -> None:
    env = bare_env(tmp_path / "home", RT_CLUSTER_HOME=str(cluster_home))
    config = tmp_path / "node.yaml"
    config.write_text("workload: {enabled: false}\n")
    tool = venv / "bin" / "rt_cluster"
    ports = ["--base-port", "0", "--runtime-base-port", "0"]
    run(
        [tool, "up", "-n", "2", "--name", "pkg", *ports, "--config", config], cwd=elsewhere, env=env
    )
    shown = run([tool, "status", "--json", "--name", "pkg"], cwd=elsewhere, env=env)
    status = json.loads(shown.stdout)
    nodes = status["nodes"]
    assert [n["state"] for n in nodes] == ["running", "running"], nodes
    for n in nodes:
        argv = Path(f"/proc/{n['pid']}/cmdline").read_bytes().split(b"\0")
        assert argv[0].decode().startswith(str(venv / "bin" / "python")), argv
        page = httpx.get(n["dashboard"] + "/", timeout=10.0)
        assert page.status_code == 200
        assert MARKER in page.text
    record = read_record(cluster_home / "pkg")
    assert record is not None
    run([tool, "down", "--name", "pkg"], cwd=elsewhere, env=env)
    assert all(process_state(n.pid, n.started) == "gone" for n in record.nodes)


def test_pipx_install_gives_an_rt_run_that_serves_every_page(
    built: Path, elsewhere: Path, tmp_path: Path
) -> None:
    pipx = tmp_path / "pipx"
    env = {
        **os.environ,
        "PIPX_HOME": str(pipx / "home"),
        "PIPX_BIN_DIR": str(pipx / "bin"),
        "PIPX_MAN_DIR": str(pipx / "man"),
    }
    run([sys.executable, "-m", "pipx", "install", "."], cwd=built / "src", env=env)
    prefix = pipx / "home" / "venvs" / "rtsim"
    mark_installed_copy(prefix)
    with open_harness(tmp_path) as h:
        base = start_installed_node(h, pipx / "bin", elsewhere, "node")
        assert mounts(h, "node")["rt_admin"] == prefix / "share" / "rt" / "viz" / "rt_admin"
        check_pages(base)


FIND = """
import importlib.util, sys
spec = importlib.util.spec_from_file_location("assets", sys.argv[1])
assets = importlib.util.module_from_spec(spec)
spec.loader.exec_module(assets)
print(assets.find_assets("rt_admin"), assets.find_assets("common"))
"""


def test_a_user_install_finds_its_pages_under_the_user_base(wheel: Path, tmp_path: Path) -> None:
    # --user needs an interpreter outside a venv: ours's base, driven by our pip (--python)
    base = getattr(sys, "_base_executable", sys.executable)
    user = tmp_path / "user"
    env = {**os.environ, "PYTHONUSERBASE": str(user)}
    install = ["install", "-q", "--user", "--no-deps", "--no-warn-script-location"]
    install += ["--break-system-packages", wheel]  # harmless: the user base is ours
    run([sys.executable, "-m", "pip", "--python", base, *install], cwd=tmp_path, env=env)
    site_dir = Path(sysconfig.get_path("purelib", "posix_user", vars={"userbase": str(user)}))
    assets = site_dir / "cluster" / "runtime" / "assets.py"
    pages = user / "share" / "rt" / "viz"
    want = f"{pages / 'rt_admin'} {pages / 'common'}"
    # with PYTHONUSERBASE set (the user base), and without (only where the code sits tells)
    for extra in ({"PYTHONUSERBASE": str(user)}, {}):
        env = bare_env(tmp_path / "home", **extra)
        out = run([base, "-c", FIND, assets], cwd=tmp_path, env=env)
        assert out.stdout.strip() == want, extra
