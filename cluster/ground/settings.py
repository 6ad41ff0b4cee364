"""Node settings loaded: built-in defaults < configuration file < ``RT_`` environment < command
line, with the origin of every value. The fields, their defaults and ranges: ``schema.py``.

Rules:
1. The file is ``$RT_SERVER_CONF`` if set, else ``~/.rt/rt.yaml``, else built-in defaults
   (an empty compose section, so no storage tiers). It is read through ``cluster.ground.safeyaml``:
   at most ``MAX_CONFIG_BYTES`` (a larger file is refused unread), no aliases, bounded depth.
2. Only ``RT_`` variables are read. An unset variable is not an error; a malformed one is.
3. An unknown key, a wrong type or a value out of range in the file is a SettingsError naming
   the key and the file. The ranges are the schema's and hold for every source: the file, the
   variables (parsed by ``cluster.ground.parse``), flags and ``replace``.
4. ``viz.enabled`` defaults to true for the daemon (``rt_run start``) and false for embedded
   runtimes. ``RT_VIZ_ENABLE`` is an explicit choice the daemon default does not override;
   command-line flags (``--viz``, ``--no-viz``, ``--viz-port``, ``--viz-bind``) override it.
5. Where each value came from is recorded as it is applied (``Settings.origin``): ``default``,
   ``default (daemon)`` for the launch mode's viz default, ``file <path>``, ``env RT_...``,
   ``flag --...``; the last source applied wins, as the value does.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import Field, fields, replace
from pathlib import Path
from typing import Any, Literal

from .errors import SettingsError
from .parse import ParseError, parse_int, shown
from .safeyaml import Limits, YamlError, YamlTooLarge, load, load_file
from .schema import (
    MAX_COMPOSE_ENTRIES,
    SECTIONS,
    LoggingSettings,
    NetworkingSettings,
    RuntimeSettings,
    Settings,
    VizSettings,
    WorkloadSettings,
    check_value,
)

__all__ = [
    "MAX_COMPOSE_ENTRIES",
    "MAX_CONFIG_BYTES",
    "LoggingSettings",
    "NetworkingSettings",
    "RuntimeSettings",
    "Settings",
    "VizSettings",
    "WorkloadSettings",
    "find_config_file",
    "load_settings",
    "parse_settings_text",
]

LaunchMode = Literal["daemon", "embedded"]
MAX_CONFIG_BYTES = 1 << 20  # a configuration file larger than this is refused, unread
_YAML_LIMITS = Limits(max_bytes=MAX_CONFIG_BYTES)


def find_config_file(env: Mapping[str, str]) -> Path | None:
    """``$RT_SERVER_CONF`` (which must exist when set), then ``~/.rt/rt.yaml``, else None."""
    explicit = env.get("RT_SERVER_CONF", "")
    if explicit:
        path = Path(os.path.expanduser(explicit))  # ~user of no user stays as written
        if not path.is_file():
            raise SettingsError(f"RT_SERVER_CONF names {path}, which is not a readable file")
        return path
    home = Path(env.get("HOME", str(Path.home()))) / ".rt" / "rt.yaml"
    return home if home.is_file() else None


def _coerce(value: Any, f: Field[Any], default: Any, where: str) -> Any:
    """Check ``value`` against the type of ``default`` and the field's range; return it in
    that type."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        raise SettingsError(f"{where}: expected true or false, got {shown(value)}")
    if isinstance(default, int):
        if not isinstance(value, int) or isinstance(value, bool):
            raise SettingsError(f"{where}: expected an integer, got {shown(value)}")
    elif isinstance(default, float):
        if not isinstance(value, int | float) or isinstance(value, bool):
            raise SettingsError(f"{where}: expected a number, got {shown(value)}")
    elif isinstance(default, str):
        if not isinstance(value, str):
            raise SettingsError(f"{where}: expected a string, got {shown(value)}")
    elif isinstance(default, tuple):
        if isinstance(value, str):
            value = [v for v in value.split(":" if "path" in where else ",") if v]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise SettingsError(f"{where}: expected a list of strings, got {shown(value)}")
        value = tuple(value)
    return check_value(value, f, where)


def _key(key: Any) -> str:
    """A key as written when it is printable text, else quoted (a message is one line)."""
    text = str(key)
    return text[:60] if text.isprintable() and text else shown(key)


def _section(cls: type, data: Any, where: str) -> Any:
    if data is None:
        return cls()
    if not isinstance(data, Mapping):
        raise SettingsError(f"{where}: expected a mapping, got {type(data).__name__}")
    defaults = cls()
    known = {f.name: f for f in fields(cls)}
    changes = {}
    for key, value in data.items():
        if key not in known:
            raise SettingsError(
                f"{where}.{_key(key)}: unknown key (known: {', '.join(sorted(known))})"
            )
        changes[key] = _coerce(value, known[key], getattr(defaults, key), f"{where}.{key}")
    try:
        return replace(defaults, **changes)
    except SettingsError as exc:  # a rule across fields (logging.level)
        raise SettingsError(f"{where.partition(': ')[0]}: {exc}") from None


def parse_settings_text(text: str | bytes, source: str) -> Settings:
    """Settings from YAML text; errors name ``source`` and the key."""
    return _settings_from(_load_yaml(text, source), source)


def _load_yaml(text: str | bytes, source: str) -> Any:
    try:
        return load(text, _YAML_LIMITS)
    except YamlError as exc:
        raise SettingsError(f"{source}: not valid YAML: {exc}") from None


def _settings_from(data: Any, source: str) -> Settings:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise SettingsError(f"{source}: expected a mapping of sections at the top level")
    origins: dict[str, str] = {}
    kwargs: dict[str, Any] = {"source": source, "origins": origins}
    for key, value in data.items():
        if key in SECTIONS:
            kwargs[key] = _section(SECTIONS[key], value, f"{source}: {key}")
        elif key == "swim":
            kwargs["swim"] = _swim_section(value, f"{source}: swim")
        elif key == "compose":
            kwargs["compose"] = _compose_section(value, f"{source}: compose")
            origins["compose"] = f"file {source}"
        else:
            raise SettingsError(
                f"{source}: {_key(key)}: unknown section (known: "
                f"{', '.join(sorted([*SECTIONS, 'swim', 'compose']))})"
            )
        if key != "compose" and isinstance(value, Mapping):
            origins.update({f"{key}.{k}": f"file {source}" for k in value})
    return Settings(**kwargs)


def _swim_section(value: Any, where: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise SettingsError(f"{where}: expected a mapping")
    try:
        import swim

        swim.SwimConfig.from_mapping(value)
    except (ValueError, TypeError) as exc:
        raise SettingsError(f"{where}: {exc}") from None
    return dict(value)


def _compose_section(value: Any, where: str) -> tuple[Mapping[str, Any], ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise SettingsError(f"{where}: expected a list of pool entries")
    if len(value) > MAX_COMPOSE_ENTRIES:
        raise SettingsError(f"{where}: more than {MAX_COMPOSE_ENTRIES} pool entries")
    for i, entry in enumerate(value):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("mod_name"), str):
            raise SettingsError(f"{where}[{i}]: each entry is a mapping with a mod_name")
    return tuple(dict(e) for e in value)


def _env_int(env: Mapping[str, str], name: str, cls: type, where: str) -> int | None:
    """``name`` parsed strictly in the range of the field ``where`` (``section.key`` of ``cls``)."""
    raw = env.get(name, "")
    if raw == "":
        return None
    key = where.partition(".")[2]
    low, high = next(f for f in fields(cls) if f.name == key).metadata["range"]
    try:
        return parse_int(raw, low=low, high=high, what=where)
    except ParseError as exc:
        raise SettingsError(f"{name}={shown(raw)}: {exc}") from None


def load_settings(
    mode: LaunchMode = "embedded",
    *,
    env: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    config_file: Path | None = None,
) -> Settings:
    """Resolve the node's settings with the precedence in the module docstring.

    ``flags`` holds command-line values that were given (keys ``viz``, ``viz_port``,
    ``viz_bind``, ``port``, ``hostfile``, ``node_id``, ``host``, ``advertise``, ``events``,
    ``log_file``, ``data_dir``, ``keyring``, ``wire``, ``name``, ``join``); absent keys change
    nothing. A flag out of range
    is a SettingsError naming the setting.
    """
    env = os.environ if env is None else env
    flags = flags or {}
    settings, file_viz = _read_config(config_file or find_config_file(env))
    origins = dict(settings.origins)
    if config_file is not None:
        origins["config_file"] = "flag --config"
    elif env.get("RT_SERVER_CONF", ""):
        origins["config_file"] = "env RT_SERVER_CONF"
    viz = settings.viz
    if "enabled" not in file_viz:
        viz = replace(viz, enabled=(mode == "daemon"))
        origins["viz.enabled"] = f"default ({mode})"
    viz = _viz_flags(_viz_env(viz, env, origins), flags, origins)
    net = settings.networking
    for key in ("port", "hostfile", "node_id", "host", "advertise", "name", "join"):
        if flags.get(key) is not None:
            value: Any = tuple(flags[key]) if key == "join" else flags[key]
            net = replace(net, **{key: value})
            origins[f"networking.{key}"] = _FLAG_ORIGIN[key]
    runtime = settings.runtime
    if flags.get("data_dir") is not None:
        runtime = replace(runtime, data_dir=str(flags["data_dir"]))
        origins["runtime.data_dir"] = _FLAG_ORIGIN["data_dir"]
    log = _logging(settings, flags, origins)
    swim_cfg = settings.swim
    if flags.get("keyring") is not None:
        keyring = {**swim_cfg, "keyring_file": str(flags["keyring"])}
        swim_cfg = _swim_section(keyring, "--keyring: swim")
        origins["swim.keyring_file"] = _FLAG_ORIGIN["keyring"]
    if flags.get("wire") is not None:
        swim_cfg = _swim_section({**swim_cfg, "wire": flags["wire"]}, "--wire: swim")
        origins["swim.wire"] = _FLAG_ORIGIN["wire"]
    return replace(
        settings,
        viz=viz,
        networking=net,
        logging=log,
        runtime=runtime,
        swim=swim_cfg,
        origins=origins,
    )


_FLAGS = ("port", "hostfile", "node_id", "host", "advertise", "data_dir", "events", "log_file")
_FLAG_ORIGIN = {  # a flags key -> how the origin names it
    k: "flag --" + k.replace("_", "-")
    for k in (*_FLAGS, "keyring", "viz_port", "viz_bind", "wire", "name", "join")
} | {"viz": "flag --viz/--no-viz"}


def _read_config(path: Path | None) -> tuple[Settings, Mapping[str, Any]]:
    """The file's settings (defaults without a file) and its raw ``viz`` section (what it set)."""
    if path is None:
        return Settings(), {}
    try:
        data = load_file(path, _YAML_LIMITS)
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except YamlTooLarge as exc:
        raise SettingsError(f"{path}: {exc}, the limit of a configuration file") from None
    except YamlError as exc:
        raise SettingsError(f"{path}: not valid YAML: {exc}") from None
    settings = _settings_from(data, str(path))
    viz = data.get("viz") if isinstance(data, Mapping) else None
    return settings, viz if isinstance(viz, Mapping) else {}


def _viz_env(viz: VizSettings, env: Mapping[str, str], origins: dict[str, str]) -> VizSettings:
    """The ``RT_VIZ_*`` variables over the file's viz section (each recorded in ``origins``)."""
    enable = env.get("RT_VIZ_ENABLE", "")
    if enable:
        if enable not in ("0", "1"):
            raise SettingsError(f"RT_VIZ_ENABLE={shown(enable)}: expected 1 or 0")
        viz = replace(viz, enabled=enable == "1")
    if (port := _env_int(env, "RT_VIZ_PORT", VizSettings, "viz.port")) is not None:
        viz = replace(viz, port=port)
    if env.get("RT_VIZ_BIND"):
        viz = _env_replace(viz, "RT_VIZ_BIND", bind=env["RT_VIZ_BIND"])
    threads = _env_int(env, "RT_VIZ_MAX_THREADS", VizSettings, "viz.max_threads")
    if threads is not None:
        viz = replace(viz, max_threads=threads)
    if env.get("RT_VIZ_PATH"):
        path = tuple(p for p in env["RT_VIZ_PATH"].split(":") if p)
        viz = _env_replace(viz, "RT_VIZ_PATH", path=path)
    for key in ("enable", "port", "bind", "max_threads", "path"):
        if env.get(f"RT_VIZ_{key.upper()}"):
            origins["viz." + ("enabled" if key == "enable" else key)] = f"env RT_VIZ_{key.upper()}"
    return viz


def _env_replace(viz: VizSettings, name: str, **change: Any) -> VizSettings:
    try:
        return replace(viz, **change)
    except SettingsError as exc:
        raise SettingsError(f"{name}: {exc}") from None


def _viz_flags(viz: VizSettings, flags: Mapping[str, Any], origins: dict[str, str]) -> VizSettings:
    """``--viz``/``--no-viz``; ``--viz-port`` and ``--viz-bind`` turn the dashboard on."""
    if flags.get("viz") is not None:
        viz = replace(viz, enabled=bool(flags["viz"]))
        origins["viz.enabled"] = _FLAG_ORIGIN["viz"]
    if flags.get("viz_port") is not None:
        viz = replace(viz, enabled=True, port=flags["viz_port"])
        origins["viz.enabled"] = origins["viz.port"] = _FLAG_ORIGIN["viz_port"]
    if flags.get("viz_bind") is not None:
        viz = replace(viz, enabled=True, bind=str(flags["viz_bind"]))
        origins["viz.enabled"] = origins["viz.bind"] = _FLAG_ORIGIN["viz_bind"]
    return viz


def _logging(
    settings: Settings, flags: Mapping[str, Any], origins: dict[str, str]
) -> LoggingSettings:
    log = settings.logging
    for key, field_name in (("events", "events"), ("log_file", "file")):
        if flags.get(key) is not None:
            log = replace(log, **{field_name: str(flags[key])})
            origins[f"logging.{field_name}"] = _FLAG_ORIGIN[key]
    return log
