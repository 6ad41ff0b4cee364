"""Node settings: built-in defaults < configuration file < ``RT_`` environment < command line.

Rules:
1. The file is ``$RT_SERVER_CONF`` if set, else ``~/.rt/rt.yaml``, else built-in defaults
   (an empty compose section, so no storage tiers).
2. Only ``RT_`` variables are read. An unset variable is not an error; a malformed one is.
3. An unknown key or a wrong type in the file is a SettingsError naming the key and the file.
4. ``viz.enabled`` defaults to true for the daemon (``rt_run start``) and false for embedded
   runtimes. ``RT_VIZ_ENABLE`` is an explicit choice the daemon default does not override;
   command-line flags (``--viz``, ``--no-viz``, ``--viz-port``, ``--viz-bind``) override it.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, Literal

import yaml

from .errors import SettingsError

__all__ = [
    "LoggingSettings",
    "NetworkingSettings",
    "RuntimeSettings",
    "Settings",
    "VizSettings",
    "WorkloadSettings",
    "find_config_file",
    "load_settings",
]

LaunchMode = Literal["daemon", "embedded"]
LOG_LEVELS = ("debug", "info", "warn", "error")
DEFAULT_MODULES = ("rt_admin", "rt_bdev", "rt_safe_bdev", "rt_cte_core")


@dataclass(frozen=True, slots=True)
class NetworkingSettings:
    host: str = "127.0.0.1"
    port: int = 9413
    hostfile: str = ""
    node_id: int = -1  # -1: the line offset of this node's own entry in the hostfile


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    num_threads: int = 4
    worker_count: int = 0  # 0: as many workers as num_threads
    learning_rate: float = 0.2
    conf_dir: str = "~/.rt"
    data_dir: str = ""  # "" : <conf_dir>/data/node-<port>
    modules: tuple[str, ...] = DEFAULT_MODULES

    @property
    def workers(self) -> int:
        return self.worker_count or self.num_threads


@dataclass(frozen=True, slots=True)
class VizSettings:
    enabled: bool = False
    port: int = 8080
    bind: str = "127.0.0.1"
    max_threads: int = 16
    path: tuple[str, ...] = ()
    allowed_hosts: tuple[str, ...] = ()  # extra Host names accepted besides the bind address


@dataclass(frozen=True, slots=True)
class LoggingSettings:
    level: str = "info"
    file: str = ""
    events: str = ""  # membership event log (JSON lines); "" : none


@dataclass(frozen=True, slots=True)
class WorkloadSettings:
    enabled: bool = True
    rate: float = 20.0  # tasks per second over the node's pools
    io_size: int = 4096  # bytes per synthetic read or write
    pools: bool = True  # compose a small demo bdev, array and cte pool when compose is empty


@dataclass(frozen=True, slots=True)
class Settings:
    networking: NetworkingSettings = field(default_factory=NetworkingSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    viz: VizSettings = field(default_factory=VizSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    swim: Mapping[str, Any] = field(default_factory=dict)
    compose: tuple[Mapping[str, Any], ...] = ()
    source: str = ""  # the configuration file read, "" for built-in defaults

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
            else:
                out[f.name] = _plain(value)
        return out

    @property
    def data_dir(self) -> Path:
        if self.runtime.data_dir:
            return Path(self.runtime.data_dir).expanduser()
        return Path(self.runtime.conf_dir).expanduser() / "data" / f"node-{self.networking.port}"


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


_SECTIONS: dict[str, type] = {
    "networking": NetworkingSettings,
    "runtime": RuntimeSettings,
    "viz": VizSettings,
    "logging": LoggingSettings,
    "workload": WorkloadSettings,
}


def find_config_file(env: Mapping[str, str]) -> Path | None:
    """``$RT_SERVER_CONF`` (which must exist when set), then ``~/.rt/rt.yaml``, else None."""
    explicit = env.get("RT_SERVER_CONF", "")
    if explicit:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise SettingsError(f"RT_SERVER_CONF names {path}, which is not a readable file")
        return path
    home = Path(env.get("HOME", str(Path.home()))) / ".rt" / "rt.yaml"
    return home if home.is_file() else None


def _coerce(value: Any, default: Any, where: str) -> Any:
    """Check ``value`` against the type of ``default``; return it in that type."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise SettingsError(f"{where}: expected true or false, got {value!r}")
    if isinstance(default, int):
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise SettingsError(f"{where}: expected an integer, got {value!r}")
    if isinstance(default, float):
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise SettingsError(f"{where}: expected a number, got {value!r}")
    if isinstance(default, str):
        if isinstance(value, str):
            return value
        raise SettingsError(f"{where}: expected a string, got {value!r}")
    if isinstance(default, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(":" if "path" in where else ",") if v]
        if isinstance(value, list) and all(isinstance(v, str) for v in value):
            return tuple(value)
        raise SettingsError(f"{where}: expected a list of strings, got {value!r}")
    raise SettingsError(f"{where}: unsupported setting")  # pragma: no cover


def _section(cls: type, data: Any, where: str) -> Any:
    if data is None:
        return cls()
    if not isinstance(data, Mapping):
        raise SettingsError(f"{where}: expected a mapping, got {type(data).__name__}")
    defaults = cls()
    known = {f.name for f in fields(cls)}
    changes = {}
    for key, value in data.items():
        if key not in known:
            raise SettingsError(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
        changes[key] = _coerce(value, getattr(defaults, key), f"{where}.{key}")
    return replace(defaults, **changes)


def parse_settings_text(text: str, source: str) -> Settings:
    """Settings from YAML text; errors name ``source`` and the key."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SettingsError(f"{source}: not valid YAML: {exc}") from None
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"{source}: expected a mapping of sections at the top level")
    kwargs: dict[str, Any] = {"source": source}
    for key, value in data.items():
        if key in _SECTIONS:
            kwargs[key] = _section(_SECTIONS[key], value, f"{source}: {key}")
        elif key == "swim":
            kwargs["swim"] = _swim_section(value, f"{source}: swim")
        elif key == "compose":
            kwargs["compose"] = _compose_section(value, f"{source}: compose")
        else:
            raise SettingsError(
                f"{source}: {key}: unknown section (known: "
                f"{', '.join(sorted([*_SECTIONS, 'swim', 'compose']))})"
            )
    return Settings(**kwargs)


def _swim_section(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SettingsError(f"{where}: expected a mapping")
    try:
        import swim

        swim.SwimConfig.from_mapping(value)
    except ValueError as exc:
        raise SettingsError(f"{where}: {exc}") from None
    return dict(value)


def _compose_section(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SettingsError(f"{where}: expected a list of pool entries")
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("mod_name"), str):
            raise SettingsError(f"{where}[{i}]: each entry is a mapping with a mod_name")
    return tuple(dict(e) for e in value)


def _env_int(env: Mapping[str, str], name: str) -> int | None:
    raw = env.get(name, "")
    if raw == "":
        return None
    try:
        value = int(raw)
    except ValueError:
        raise SettingsError(f"{name}={raw!r}: expected an integer") from None
    if value < 0:
        raise SettingsError(f"{name}={raw!r}: must not be negative")
    return value


def load_settings(
    mode: LaunchMode = "embedded",
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Resolve the node's settings with the precedence in the module docstring.

    ``flags`` holds command-line values that were given (keys ``viz``, ``viz_port``,
    ``viz_bind``, ``port``, ``hostfile``, ``node_id``, ``host``, ``events``, ``log_file``,
    ``data_dir``); absent keys change nothing.
    """
    env = os.environ if env is None else env
    flags = flags or {}
    settings, file_viz = _read_config(config_file or find_config_file(env))
    viz = settings.viz
    if "enabled" not in file_viz:
        viz = replace(viz, enabled=(mode == "daemon"))
    viz = _checked_viz(_viz_flags(_viz_env(viz, env), flags))
    net = settings.networking
    for key in ("port", "hostfile", "node_id", "host"):
        if flags.get(key) is not None:
            net = replace(net, **{key: flags[key]})
    runtime = settings.runtime
    if flags.get("data_dir") is not None:
        runtime = replace(runtime, data_dir=str(flags["data_dir"]))
    log = _logging(settings, flags)
    return replace(settings, viz=viz, networking=net, logging=log, runtime=runtime)


def _read_config(path: Path | None) -> tuple[Settings, Mapping[str, Any]]:
    """The file's settings (built-in defaults without a file) and its raw ``viz`` section,
    which tells what the file set explicitly."""
    if path is None:
        return Settings(), {}
    try:
        text = path.read_text()
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror}") from None
    settings = parse_settings_text(text, str(path))
    return settings, (yaml.safe_load(text) or {}).get("viz") or {}


def _viz_env(viz: VizSettings, env: Mapping[str, str]) -> VizSettings:
    """The ``RT_VIZ_*`` variables over the file's viz section."""
    enable = env.get("RT_VIZ_ENABLE", "")
    if enable:
        if enable not in ("0", "1"):
            raise SettingsError(f"RT_VIZ_ENABLE={enable!r}: expected 1 or 0")
        viz = replace(viz, enabled=enable == "1")
    if (port := _env_int(env, "RT_VIZ_PORT")) is not None:
        viz = replace(viz, port=port)
    if env.get("RT_VIZ_BIND"):
        viz = replace(viz, bind=env["RT_VIZ_BIND"])
    if (threads := _env_int(env, "RT_VIZ_MAX_THREADS")) is not None:
        viz = replace(viz, max_threads=threads)
    if env.get("RT_VIZ_PATH"):
        viz = replace(viz, path=tuple(p for p in env["RT_VIZ_PATH"].split(":") if p))
    return viz


def _viz_flags(viz: VizSettings, flags: Mapping[str, Any]) -> VizSettings:
    """``--viz``/``--no-viz``; ``--viz-port`` and ``--viz-bind`` turn the dashboard on."""
    if flags.get("viz") is not None:
        viz = replace(viz, enabled=bool(flags["viz"]))
    if flags.get("viz_port") is not None:
        viz = replace(viz, enabled=True, port=int(flags["viz_port"]))
    if flags.get("viz_bind") is not None:
        viz = replace(viz, enabled=True, bind=str(flags["viz_bind"]))
    return viz


def _checked_viz(viz: VizSettings) -> VizSettings:
    if viz.port > 65535:
        raise SettingsError(f"viz.port {viz.port}: not a TCP port")
    if viz.max_threads < 1:
        raise SettingsError(f"viz.max_threads {viz.max_threads}: must be at least 1")
    return viz


def _logging(settings: Settings, flags: Mapping[str, Any]) -> LoggingSettings:
    log = settings.logging
    if log.level not in LOG_LEVELS:
        raise SettingsError(
            f"{settings.source or 'settings'}: logging.level: expected one of "
            f"{', '.join(LOG_LEVELS)}, got {log.level!r}"
        )
    if flags.get("events") is not None:
        log = replace(log, events=str(flags["events"]))
    if flags.get("log_file") is not None:
        log = replace(log, file=str(flags["log_file"]))
    return log
