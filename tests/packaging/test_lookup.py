"""Where the lookup searches for pages (cluster/runtime/assets.py): the installed prefixes a
package location implies, and the order of the roots."""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from cluster.runtime.assets import find_assets, installed_prefixes, viz_roots

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("packages", "prefix"),
    [
        ("/v/lib/python3.11/site-packages", "/v"),  # a venv, pipx's venv, pip --prefix
        ("/home/u/.local/lib/python3.11/site-packages", "/home/u/.local"),  # pip --user
        ("/usr/lib/python3/dist-packages", "/usr"),  # Debian's system packages
        ("/usr/local/lib/python3.11/dist-packages", "/usr/local"),  # Debian's pip
        ("/opt/p/lib64/python3.11/site-packages", "/opt/p"),
    ],
)
def test_the_prefix_the_packages_were_installed_under_comes_first(
    packages: str, prefix: str
) -> None:
    found = installed_prefixes(Path(packages), prefix="/sys", user_base="/user")
    assert found == [Path(prefix), Path("/sys"), Path("/user")]


@pytest.mark.parametrize(
    "packages", ["/src/rtsim", "/x/site-packages", "/x/python3.11/site-packages", "/x/lib/eggs"]
)
def test_no_installed_layout_means_sys_prefix_then_user_base(packages: str) -> None:
    found = installed_prefixes(Path(packages), prefix="/sys", user_base="/user")
    assert found == [Path("/sys"), Path("/user")]


def test_a_prefix_is_named_once() -> None:
    packages = Path("/v/lib/python3.11/site-packages")
    assert installed_prefixes(packages, prefix="/v", user_base="/v") == [Path("/v")]


def test_defaults_are_sys_prefix_and_the_user_base(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("site.USER_BASE", None)  # getuserbase() computes it again
    monkeypatch.setenv("PYTHONUSERBASE", "/elsewhere/user")
    found = installed_prefixes(Path("/src"))
    assert found == [Path(sys.prefix), Path("/elsewhere/user")]


def test_roots_in_the_spec_order() -> None:
    # RT_VIZ_PATH roots, then the checkout's viz/ ("built, not installed"), then installed
    roots = viz_roots(["/a", "~/b"])
    assert roots[:3] == [Path("/a"), Path("~/b").expanduser(), ROOT / "viz"]
    assert roots[3:] == [p / "share" / "rt" / "viz" for p in installed_prefixes()]


def test_an_rt_viz_path_root_wins_over_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "first" / "rt_admin").mkdir(parents=True)
    (tmp_path / "second" / "rt_admin").mkdir(parents=True)
    roots = [str(tmp_path / "first"), str(tmp_path / "second")]
    assert find_assets("rt_admin", roots) == tmp_path / "first" / "rt_admin"
    assert find_assets("rt_admin", [str(tmp_path / "none")]) == ROOT / "viz" / "rt_admin"
    assert find_assets("rt_nothing_anywhere", roots) is None


def test_the_wheel_carries_every_viz_folder() -> None:
    # pyproject.toml names each folder (flat: its files only); a new one needs its line there
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data_files = config["tool"]["setuptools"]["data-files"]
    folders = sorted(p.name for p in (ROOT / "viz").iterdir() if p.is_dir())
    assert data_files == {f"share/rt/viz/{name}": [f"viz/{name}/*"] for name in folders}
    nested = [p for name in folders for p in (ROOT / "viz" / name).iterdir() if p.is_dir()]
    assert not nested, "the wheel carries flat viz folders only"
