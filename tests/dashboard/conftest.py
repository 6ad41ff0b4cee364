"""Fixtures: an embedded runtime with a fake host table, fake peers and a fake module, and the
dashboard app built on it (QuartTrio test client: no sockets)."""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import trio
from quart_trio import QuartTrio

from cluster.api import FormField, FormSpec, ModuleRoute, RouteCall
from cluster.api import HttpModule as Module
from cluster.ground.errors import NotFound
from cluster.ground.ids import PoolId
from cluster.ground.settings import VizSettings, load_settings
from cluster.runtime import Container
from cluster.runtime.runtime import Runtime
from cluster.runtime.testing import FakeMembership, FakePeers
from dashboard import create_app

JSON = dict[str, Any]


class ThingContainer(Container):
    methods = ("poke",)

    async def monitor(self, query: str, params: Mapping[str, str]) -> Any:
        if query == "nan":
            return {"x": math.nan}
        return await super().monitor(query, params)

    def stats(self) -> JSON:
        return {"pool_name": self.info.pool_name, "size": self.config.get("size")}


class ThingModule(Module):
    """A module as other engineers write them: a create form, actions with a {pool} segment."""

    mod_name = "rt_thing"
    title = "Things"
    container_class = ThingContainer
    suggest_base = 600

    def create_form(self) -> FormSpec:
        return FormSpec(
            self.mod_name,
            "New thing pool",
            (
                FormField("pool_name", "Name", required=True),
                FormField("pool_id", "Id", default=self.suggestion()),
                FormField("size", "Size", default="1"),
            ),
        )

    def form_to_compose(self, params: Mapping[str, str]) -> tuple[JSON, dict[str, str]]:
        size = params.get("size", "1")
        if not size.isdigit():
            return {}, {"size": f"not a number: '{size}'"}
        return {"size": int(size)}, {}

    def validate_config(self, config: Mapping[str, Any]) -> dict[str, str]:
        size = config.get("size", 1)
        return {} if isinstance(size, int) else {"size": "must be an integer"}

    def _pool(self, call: RouteCall) -> Container:
        pool_id = PoolId.parse(call.path_args["pool"])
        c = call.runtime.pools.find(pool_id)
        if c is None or c.info.mod_name != self.mod_name:
            raise NotFound(f"no {self.mod_name} pool with id {pool_id}")
        return c

    def action_routes(self) -> list[ModuleRoute]:
        async def things(call: RouteCall) -> JSON:
            c = self._pool(call)
            return {"pool_id": str(c.info.pool_id), "params": dict(call.params)}

        async def poke(call: RouteCall) -> JSON:
            c = self._pool(call)
            return {"ok": True, "pool_id": str(c.info.pool_id), "name": call.require("name")}

        async def boom(call: RouteCall) -> JSON:
            raise RuntimeError("kaboom")

        async def floats(call: RouteCall) -> JSON:
            return {"nan": math.nan, "inf": [math.inf, -math.inf, 1.5], "ok": 2.0}

        return [
            ModuleRoute("GET", "{pool}/things", things, "list things of a pool"),
            ModuleRoute("POST", "{pool}/poke", poke, "poke a pool"),
            ModuleRoute("GET", "boom", boom, "always fails"),
            ModuleRoute("GET", "floats", floats, "non-finite floats"),
        ]


def write_viz(root: Path) -> Path:
    for rel, text in {
        "rt_admin/index.html": "<!doctype html><title>Cluster</title>",
        "rt_admin/node.html": "<!doctype html><title>Node</title>",
        "rt_admin/sub/index.html": "sub index",
        "rt_thing/index.html": "thing page",
        "rt_thing/APP.JS": "export const x = 1;",
        "rt_thing/Style.Css": "body{}",
        "rt_thing/data.bin": "\x00\x01",
        "common/app.css": ":root{}",
    }.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (root.parent / "secret.txt").write_text("secret")
    (root / "rt_thing" / "link.txt").symlink_to(root.parent / "secret.txt")
    return root


@pytest.fixture
def viz_root(tmp_path: Path) -> Path:
    return write_viz(tmp_path / "viz")


def make_runtime(tmp_path: Path, viz_root: Path, **viz: Any) -> Runtime:
    env = {"HOME": str(tmp_path), "RT_VIZ_PATH": str(viz_root)}
    settings = load_settings("embedded", env=env)
    settings = replace(
        settings,
        runtime=replace(settings.runtime, data_dir=str(tmp_path / "data"), modules=("rt_admin",)),
        viz=replace(settings.viz, **viz),
    )
    rt = Runtime(settings, 0, membership=FakeMembership.of(3, dead=(2,)))
    rt.modules["rt_thing"] = ThingModule(rt)
    rt.refresh_assets()
    return rt


@pytest.fixture
async def runtime(tmp_path: Path, viz_root: Path) -> AsyncIterator[Runtime]:
    """Node 0 of a 3-node host table (node 2 dead), workers running, admin pool installed."""
    rt = make_runtime(tmp_path, viz_root)
    async with trio.open_nursery() as nursery:
        await nursery.start(rt.workers.serve)
        rt.install_admin_pool()
        yield rt
        nursery.cancel_scope.cancel()


@pytest.fixture
def peers(runtime: Runtime) -> FakePeers:
    return FakePeers(runtime)


@pytest.fixture
def app(runtime: Runtime, peers: FakePeers) -> QuartTrio:
    return create_app(runtime, runtime.settings.viz)


@pytest.fixture
def client(app: QuartTrio) -> Any:
    return app.test_client()


async def call(client: Any, method: str, path: str, **kwargs: Any) -> tuple[int, Any, Any]:
    """(status, parsed JSON body, response) of one request."""
    response = await getattr(client, method.lower())(path, **kwargs)
    raw = await response.get_data(as_text=True)
    assert response.headers["Content-Type"] == "application/json", (path, raw[:200])
    return response.status_code, json.loads(raw), response


def viz_settings(**kw: Any) -> VizSettings:
    return replace(VizSettings(), **kw)
