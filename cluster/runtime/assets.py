"""Where a module's page assets are: the spec's "Page assets" table, found per call.

Rules:
1. The first ``<root>/<mod_name>`` folder that exists wins, roots in this order: the
   ``RT_VIZ_PATH`` roots (``viz.path``); the source checkout's ``viz/`` next to the loaded
   packages ("built, not installed": a clone, or an editable install of one); then the
   installed layout ``<prefix>/share/rt/viz`` of every prefix in ``installed_prefixes``.
2. The installed prefixes, in order: the one the loaded packages were installed under (they
   sit in ``<prefix>/lib/pythonX.Y/site-packages``, or Debian's ``dist-packages``: a venv,
   pipx's venv, ``pip install --prefix``, ``pip install --user`` whose prefix is
   ``site.USER_BASE``), then ``sys.prefix``, then the user base. A wheel puts the pages there
   (``[tool.setuptools.data-files]`` in pyproject.toml).
3. The checkout comes before the installed layout: the pages next to the loaded code are the
   ones that go with it, whatever another install left under the same prefix.
4. Nothing is cached, so ``rt_run refresh`` sees pages installed after the node started.
"""

from __future__ import annotations

import os
import site
import sys
from collections.abc import Iterable
from pathlib import Path

__all__ = ["find_assets", "installed_prefixes", "viz_roots"]

# The folder holding our packages: the checkout, or site-packages when installed.
_PACKAGES = Path(__file__).resolve().parents[2]
_SITE_DIRS = ("site-packages", "dist-packages")
INSTALLED_VIZ = Path("share", "rt", "viz")  # under a prefix


def installed_prefixes(
    packages: Path = _PACKAGES, prefix: str | None = None, user_base: str | None = None
) -> list[Path]:
    """The prefixes whose ``share/rt/viz`` may hold installed pages (rule 2), no repeats.
    ``prefix`` and ``user_base`` default to ``sys.prefix`` and ``site.getuserbase()``."""
    found: list[Path] = []
    lib = packages.parent  # <prefix>/lib/pythonX.Y (or lib64) when ``packages`` is a site folder
    in_lib = lib.name.startswith("python") and lib.parent.name.startswith("lib")
    if packages.name in _SITE_DIRS and in_lib:
        found.append(lib.parent.parent)
    found.append(Path(sys.prefix if prefix is None else prefix))
    found.append(Path(site.getuserbase() if user_base is None else user_base))
    unique: list[Path] = []
    for p in found:
        if p not in unique:
            unique.append(p)
    return unique


def viz_roots(extra: Iterable[str] = ()) -> list[Path]:
    """Every root searched, in order (rule 1): ``extra`` (the ``RT_VIZ_PATH`` roots), the
    checkout's ``viz/``, then each installed prefix's ``share/rt/viz``."""
    roots = [Path(os.path.expanduser(p)) for p in extra]
    roots.append(_PACKAGES / "viz")
    roots.extend(prefix / INSTALLED_VIZ for prefix in installed_prefixes())
    return roots


def find_assets(mod_name: str, extra_roots: Iterable[str] = ()) -> Path | None:
    """The first ``<root>/<mod_name>`` folder that exists, or None."""
    for root in viz_roots(extra_roots):
        candidate = root / mod_name
        if candidate.is_dir():
            return candidate
    return None
