"""Page assets: ``/viz/<mod_name>/...`` from each module's asset folder, and ``/``.

Rules (the reference's):
1. ``/viz/<mod>/`` maps to the module's folder (``runtime.assets``, looked up per request so
   ``rt_run refresh`` is seen) and ``/viz/common/`` to the shared js/css folder.
2. An empty path or a folder gives its ``index.html``.
3. ``..``, NUL, a backslash, ``:`` or a leading ``/`` in the rest of the path is refused with
   404; so is anything whose real path leaves the folder (a symlink pointing out), a path of
   more than ``MAX_ASSET_PATH`` characters, and any path the file system refuses (a name too
   long, a symlink loop, no permission, a file gone while read).
4. ``Cache-Control: no-cache``; the MIME type comes from the extension, case-insensitively.
5. GET and HEAD only; ``/`` is the Cluster page, ``viz/rt_admin/index.html``.
6. Out of file descriptors or memory, an asset answers 503 (``dashboard.errors``), never 500.
"""

from __future__ import annotations

import logging
import mimetypes
from pathlib import Path

import trio
from quart import Response, request

from cluster.ground.errors import NotFound
from cluster.runtime import RuntimeView, find_assets

from .errors import RESOURCE_ERRNOS

__all__ = ["COMMON", "asset_response", "mounts"]

log = logging.getLogger(__name__)
COMMON = "common"  # viz/common: js and css shared by every module's pages
_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".htm": "text/html; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".mjs": "text/javascript; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".svg": "image/svg+xml",
    ".png": "image/png",
    ".ico": "image/x-icon",
    ".txt": "text/plain; charset=utf-8",
    ".woff2": "font/woff2",
}
_REFUSED = ("..", "\x00", "\\", ":")
MAX_ASSET_PATH = 1024  # characters after /viz/<mod>/


def mime_type(name: str) -> str:
    suffix = Path(name.lower()).suffix
    if suffix in _TYPES:
        return _TYPES[suffix]
    guessed, _ = mimetypes.guess_type(name.lower())
    return guessed or "application/octet-stream"


def mounts(runtime: RuntimeView) -> dict[str, str]:
    """``mod_name -> folder`` for every mount, the shared ``common`` folder included."""
    found = dict(runtime.assets)
    if COMMON not in found:
        common = find_assets(COMMON, runtime.settings.viz.path)
        if common is not None:
            found[COMMON] = str(common)
    return found


def _resolve(folder: str, rest: str) -> Path | None:
    if len(rest) > MAX_ASSET_PATH or rest.startswith("/") or any(b in rest for b in _REFUSED):
        return None
    try:
        root = Path(folder).resolve()
        target = (root / rest).resolve() if rest else root
        if not target.is_relative_to(root):
            return None
        if target.is_dir():
            target = target / "index.html"
        return target if target.is_file() else None
    except (OSError, ValueError) as exc:  # ENAMETOOLONG, ELOOP, EACCES, a surrogate ...
        if isinstance(exc, OSError) and exc.errno in RESOURCE_ERRNOS:
            raise
        return None


async def asset_response(runtime: RuntimeView, mod_name: str, rest: str) -> Response:
    """The file ``rest`` of ``mod_name``'s folder, or NotFound (the unknown-route message)."""
    folder = mounts(runtime).get(mod_name)
    target = _resolve(folder, rest) if folder is not None else None
    if target is None:
        raise NotFound(f"no route or asset for {request.path}")
    try:
        data = await trio.Path(target).read_bytes()
    except OSError as exc:
        if exc.errno in RESOURCE_ERRNOS:
            raise  # 503: dashboard.errors
        raise NotFound(f"no route or asset for {request.path}") from None
    response = Response(data, status=200, content_type=mime_type(target.name))
    response.headers["Cache-Control"] = "no-cache"
    return response
