"""``rt_cluster``: the command on top of ``cluster.local`` and ``scenarios``."""

from .cli import main

__all__ = ["main"]
