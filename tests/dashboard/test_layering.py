"""Dependency direction: the dashboard imports the runtime (cluster), never the membership
driver (swim); the runtime never imports the dashboard, except the node's composition root."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def imported(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_dashboard_does_not_import_swim() -> None:
    for path in (ROOT / "dashboard").glob("*.py"):
        assert "swim" not in imported(path), path


def test_only_the_node_imports_the_dashboard() -> None:
    for path in (ROOT / "cluster").rglob("*.py"):
        if path.name != "node.py":
            assert "dashboard" not in imported(path), path
