"""Page assets under /viz/<mod>/ and the Cluster page at /."""

from __future__ import annotations

from typing import Any

import pytest

from cluster.runtime.runtime import Runtime


async def get(client: Any, path: str, method: str = "GET") -> tuple[int, str, Any]:
    response = await getattr(client, method.lower())(path)
    return response.status_code, await response.get_data(as_text=True), response


async def test_root_is_the_cluster_page(client: Any) -> None:
    status, text, response = await get(client, "/")
    assert status == 200
    assert text == "<!doctype html><title>Cluster</title>"
    assert response.headers["Content-Type"] == "text/html; charset=utf-8"
    assert response.headers["Cache-Control"] == "no-cache"


@pytest.mark.parametrize(
    ("path", "text"),
    [
        ("/viz/rt_admin/", "<!doctype html><title>Cluster</title>"),
        ("/viz/rt_admin", "<!doctype html><title>Cluster</title>"),
        ("/viz/rt_admin/index.html", "<!doctype html><title>Cluster</title>"),
        ("/viz/rt_admin/node.html", "<!doctype html><title>Node</title>"),
        ("/viz/rt_admin/sub", "sub index"),
        ("/viz/rt_admin/sub/", "sub index"),
        ("/viz/rt_thing/", "thing page"),
        ("/viz/common/app.css", ":root{}"),
    ],
)
async def test_files_and_folder_index(client: Any, path: str, text: str) -> None:
    status, body, response = await get(client, path)
    assert (status, body) == (200, text)
    assert response.headers["Cache-Control"] == "no-cache"


@pytest.mark.parametrize(
    ("path", "mime"),
    [
        ("/viz/rt_thing/APP.JS", "text/javascript; charset=utf-8"),
        ("/viz/rt_thing/Style.Css", "text/css; charset=utf-8"),
        ("/viz/common/app.css", "text/css; charset=utf-8"),
        ("/viz/rt_thing/data.bin", "application/octet-stream"),
    ],
)
async def test_mime_from_extension_case_insensitive(client: Any, path: str, mime: str) -> None:
    status, _, response = await get(client, path)
    assert status == 200
    assert response.headers["Content-Type"] == mime


async def test_head(client: Any) -> None:
    status, _, response = await get(client, "/viz/rt_thing/APP.JS", "HEAD")
    assert status == 200
    assert response.headers["Content-Type"] == "text/javascript; charset=utf-8"


@pytest.mark.parametrize(
    "path",
    [
        "/viz/rt_thing/../rt_admin/index.html",
        "/viz/rt_thing/%2e%2e/rt_admin/index.html",
        "/viz/rt_thing/..%2f..%2fsecret.txt",
        "/viz/rt_thing/a%00b",
        "/viz/rt_thing/a%5cb",
        "/viz/rt_thing/%5c..%5csecret.txt",
        "/viz/rt_thing/c:secret.txt",
        "/viz/rt_thing//etc/passwd",
        "/viz/rt_thing/%2fetc%2fpasswd",
        "/viz/rt_thing/link.txt",  # a symlink leading out of the folder
        "/viz/rt_thing/missing.js",
        "/viz/rt_nope/index.html",
        "/viz/../secret.txt",
    ],
)
async def test_refused_paths_are_json_404(client: Any, path: str) -> None:
    status, body, response = await get(client, path)
    assert status == 404, body
    assert response.headers["Content-Type"] == "application/json"
    assert body != "secret"
    assert body.startswith('{"error":"no route or asset for ')


async def test_post_to_an_asset_is_405(client: Any) -> None:
    status, _, _ = await get(client, "/viz/rt_thing/index.html", "POST")
    assert status == 405


async def test_root_without_cluster_page_is_404(client: Any, runtime: Runtime) -> None:
    runtime.assets.pop("rt_admin")
    status, body, _ = await get(client, "/")
    assert (status, body) == (404, '{"error":"no route or asset for /"}\n')


async def test_refresh_is_seen_per_request(client: Any, runtime: Runtime, tmp_path: Any) -> None:
    other = tmp_path / "other_thing"
    other.mkdir()
    (other / "index.html").write_text("moved")
    runtime.assets["rt_thing"] = str(other)
    assert (await get(client, "/viz/rt_thing/"))[:2] == (200, "moved")
