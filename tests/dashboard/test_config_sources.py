"""``/api/config``: the settings as before, plus ``sources`` (where each came from) and
``paths`` (the paths in use, ``~`` expanded) for the config page's "from" column."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from cluster.ground.settings import load_settings
from cluster.runtime.runtime import Runtime
from dashboard import create_app

from .conftest import call


async def test_config_says_where_each_value_came_from(client: Any, runtime: Runtime) -> None:
    status, body, _ = await call(client, "GET", "/api/config")
    assert status == 200
    settings = [k for k in body if k not in ("sources", "paths")]
    assert set(settings) <= set(body["sources"])  # every setting has a source
    assert body["sources"]["port"] == "default"
    assert body["sources"]["modules"] == "default"  # replaced in code, not by a source
    assert body["sources"]["swim_enabled"].startswith("derived")
    assert body["sources"]["worker_count"] == "derived: num_threads (worker_count 0)"
    assert body["conf_dir"] == "~/.rt"
    assert body["paths"]["conf_dir"].endswith("/.rt")
    assert not body["paths"]["conf_dir"].startswith("~")
    assert body["paths"]["data_dir"] == str(runtime.settings.data_dir)
    assert body["paths"]["config_file"] is None


async def test_config_sources_from_a_file_env_and_flags(tmp_path: Path, viz_root: Path) -> None:
    conf = tmp_path / "rt.yaml"
    conf.write_text("runtime: {num_threads: 3, conf_dir: ~/rt-conf}\nviz: {bind: 127.0.0.1}\n")
    env = {"HOME": str(tmp_path), "RT_SERVER_CONF": str(conf), "RT_VIZ_PORT": "8123"}
    settings = load_settings("embedded", env=env, flags={"port": 9999})
    settings = replace(settings, runtime=replace(settings.runtime, data_dir=str(tmp_path / "d")))
    client = create_app(Runtime(settings, 0), settings.viz).test_client()
    _, body, _ = await call(client, "GET", "/api/config")
    assert body["num_threads"] == 3
    assert body["conf_dir"] == "~/rt-conf"  # the value as configured ...
    assert body["paths"]["conf_dir"].endswith("/rt-conf")  # ... and the path in use
    assert "~" not in body["paths"]["conf_dir"]
    assert body["sources"] == body["sources"] | {
        "num_threads": f"file {conf}",
        "conf_dir": f"file {conf}",
        "viz_bind": f"file {conf}",
        "viz_port": "env RT_VIZ_PORT",
        "port": "flag --port",
        "learning_rate": "default",
        "config_file": "env RT_SERVER_CONF",
    }
    assert body["paths"]["config_file"] == str(conf)
