"""Logging of a node process: one format, the node id in every line, ``logging.file`` or stderr.

A ``logging.file`` that cannot be opened for appending (a directory, a missing folder, no
permission) is a SettingsError naming the file, before anything else starts.
"""

from __future__ import annotations

import logging
import sys

from cluster.ground.errors import SettingsError
from cluster.ground.settings import Settings

__all__ = ["configure_logging", "set_node_id"]

_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "warn": logging.WARNING,
    "error": logging.ERROR,
}
_node_id = "-"


def set_node_id(node_id: int | None) -> None:
    global _node_id
    _node_id = "-" if node_id is None else str(node_id)


class _NodeFilter(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        record.node = _node_id
        return True


def configure_logging(settings: Settings) -> None:
    """Send the root logger to ``logging.file`` (or stderr) at ``logging.level``."""
    handler: logging.Handler
    if settings.logging.file:
        try:
            handler = logging.FileHandler(settings.logging.file)
        except OSError as exc:
            raise SettingsError(
                f"logging.file {settings.logging.file}: cannot open: {exc.strerror or exc}"
            ) from None
    else:
        handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_NodeFilter())
    handler.setFormatter(
        logging.Formatter("%(asctime)s node=%(node)s %(levelname)s %(name)s: %(message)s")
    )
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(_LEVELS[settings.logging.level])
    for noisy in ("hypercorn.access", "quart.serving"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
