"""The settings' schema: every section's fields with their defaults, units and ranges.

Rules:
1. A field's default, unit and range sit on its line: ``_int(default, low, high)`` and
   ``_float(...)`` carry the range, ``path=True`` marks a path (its ``~`` must name a home).
2. Every section checks itself in ``__post_init__`` (``check_value`` on each field): every number
   in its range, every string at most ``MAX_TEXT`` characters with no NUL, every list at most
   ``MAX_ITEMS`` entries. So no Settings out of range can exist, whichever source (file,
   variable, flag or ``replace``) made it.
3. Nothing here reads a file or the environment: how settings are loaded, layered and where
   each value came from is ``cluster.ground.settings``.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import Field, dataclass, field, fields
from pathlib import Path
from typing import Any

from .errors import SettingsError
from .parse import MAX_NODE_ID, PORT_MAX, ParseError, float_value, int_value, shown

__all__ = [
    "MAX_COMPOSE_ENTRIES",
    "SECTIONS",
    "LoggingSettings",
    "NetworkingSettings",
    "RuntimeSettings",
    "Settings",
    "VizSettings",
    "WorkloadSettings",
    "check_value",
]

LOG_LEVELS = ("debug", "info", "warn", "error")
DEFAULT_MODULES = ("rt_admin", "rt_bdev", "rt_safe_bdev", "rt_cte_core")
MAX_COMPOSE_ENTRIES = 1000  # pools a configuration may compose at start-up
MAX_TEXT = 4096  # characters of one string setting (a path, a host name)
MAX_ITEMS = 64  # entries of one list setting (modules, asset paths)
MAX_THREADS = 1024  # workers, dashboard request slots
_IPV6 = r"[0-9a-f.]*(?::[0-9a-f.]*){2,8}"
_LABEL = r"(?!-)[a-z0-9-]{1,63}(?<!-)"
_MEMBER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,127}\Z")
_HOST_NAME = re.compile(rf"(?:{_IPV6}|{_LABEL}(?:\.{_LABEL}){{0,126}}\.?)\Z", re.I)


def _int(default: int, low: int, high: int) -> Any:
    return field(default=default, metadata={"range": (low, high)})


def _float(default: float, low: float, high: float, *, low_open: bool = False) -> Any:
    return field(default=default, metadata={"range": (low, high), "low_open": low_open})


def _path(default: str = "") -> Any:
    return field(default=default, metadata={"path": True})


@dataclass(frozen=True, slots=True)
class NetworkingSettings:
    host: str = "127.0.0.1"
    port: int = _int(9413, 0, PORT_MAX)  # 0: any free port (tests)
    hostfile: str = _path()
    node_id: int = _int(-1, -1, MAX_NODE_ID)  # -1: this node's line offset in the hostfile
    advertise: str = ""  # the address peers are told; "": host (a wildcard host needs one)
    name: str = ""  # the node's memberlist name ("": rt-<node id>); swim.wire memberlist
    join: tuple[str, ...] = ()  # host:port of memberlist members to join through

    def __post_init__(self) -> None:
        _check_section(self, "networking")
        if self.advertise and not _HOST_NAME.match(self.advertise):
            raise SettingsError(
                "networking.advertise: expected an address or host name, "
                f"got {shown(self.advertise)}"
            )
        if self.name and not _MEMBER_NAME.match(self.name):
            raise SettingsError(
                "networking.name: expected 1 to 128 letters, digits, '.', '_' or '-' "
                f"(not first), got {shown(self.name)}"
            )
        for entry in self.join:
            host, _, port = entry.rpartition(":")
            if (
                not _HOST_NAME.match(host.strip("[]"))
                or not port.isdigit()
                or not (0 < int(port) <= PORT_MAX)
            ):
                raise SettingsError(f"networking.join: expected host:port, got {shown(entry)}")


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    num_threads: int = _int(4, 1, MAX_THREADS)
    worker_count: int = _int(0, 0, MAX_THREADS)  # 0: as many workers as num_threads
    learning_rate: float = _float(0.2, 0.0, 1.0, low_open=True)
    conf_dir: str = _path("~/.rt")
    data_dir: str = _path()  # "": <conf_dir>/data/node-<port>
    modules: tuple[str, ...] = DEFAULT_MODULES

    def __post_init__(self) -> None:
        _check_section(self, "runtime")

    @property
    def workers(self) -> int:
        return self.worker_count or self.num_threads


@dataclass(frozen=True, slots=True)
class VizSettings:
    enabled: bool = False  # the daemon's default is true (cluster.ground.settings, rule 4)
    port: int = _int(8080, 0, PORT_MAX)
    bind: str = "127.0.0.1"
    max_threads: int = _int(16, 1, MAX_THREADS)  # requests served at once
    path: tuple[str, ...] = field(default=(), metadata={"path": True})  # asset directories
    allowed_hosts: tuple[str, ...] = ()  # extra Host names accepted besides the bind address

    def __post_init__(self) -> None:
        _check_section(self, "viz")


@dataclass(frozen=True, slots=True)
class LoggingSettings:
    level: str = "info"  # one of LOG_LEVELS
    file: str = _path()
    events: str = _path()  # membership events (JSON lines)

    def __post_init__(self) -> None:
        _check_section(self, "logging")
        if self.level not in LOG_LEVELS:
            raise SettingsError(
                f"logging.level: expected one of {', '.join(LOG_LEVELS)}, got {self.level!r}"
            )


@dataclass(frozen=True, slots=True)
class WorkloadSettings:
    enabled: bool = True
    rate: float = _float(20.0, 0.0, 1000.0)  # tasks per second over the node's pools
    io_size: int = _int(4096, 1, 64 << 20)  # bytes per synthetic read or write
    pools: bool = True  # compose a small demo bdev, array and cte pool when compose is empty

    def __post_init__(self) -> None:
        _check_section(self, "workload")


@dataclass(frozen=True, slots=True)
class Settings:
    networking: NetworkingSettings = field(default_factory=NetworkingSettings)
    runtime: RuntimeSettings = field(default_factory=RuntimeSettings)
    viz: VizSettings = field(default_factory=VizSettings)
    logging: LoggingSettings = field(default_factory=LoggingSettings)
    workload: WorkloadSettings = field(default_factory=WorkloadSettings)
    swim: Mapping[str, Any] = field(default_factory=dict)  # swim.SwimConfig's keys
    compose: tuple[Mapping[str, Any], ...] = ()  # at most MAX_COMPOSE_ENTRIES pool entries
    source: str = ""  # the configuration file read, "" for built-in defaults
    # "section.key" -> where its value came from; a key not here is a default
    origins: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def origin(self, key: str) -> str:
        """Where the value of ``key`` (``section.key``) came from: ``default``, ``file <path>``,
        ``env RT_...`` or ``flag --...``."""
        return self.origins.get(key, "default")

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            if f.name == "origins":
                continue
            value = getattr(self, f.name)
            if dataclasses.is_dataclass(value) and not isinstance(value, type):
                out[f.name] = {k: _plain(v) for k, v in dataclasses.asdict(value).items()}
            else:
                out[f.name] = _plain(value)
        return out

    def paths(self) -> dict[str, str | None]:
        """The paths in use with ``~`` expanded: ``conf_dir``, ``data_dir``, ``hostfile`` and
        ``config_file`` (None when unset)."""
        host = self.networking.hostfile
        return {
            "conf_dir": str(Path(self.runtime.conf_dir).expanduser()),
            "data_dir": str(self.data_dir),
            "hostfile": str(Path(host).expanduser()) if host else None,
            "config_file": self.source or None,
        }

    @property
    def data_dir(self) -> Path:
        if self.runtime.data_dir:
            return Path(self.runtime.data_dir).expanduser()
        return Path(self.runtime.conf_dir).expanduser() / "data" / f"node-{self.networking.port}"


SECTIONS: dict[str, type] = {  # the sections of fields, by their name in the file
    "networking": NetworkingSettings,
    "runtime": RuntimeSettings,
    "viz": VizSettings,
    "logging": LoggingSettings,
    "workload": WorkloadSettings,
}


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


def _check_section(section: Any, name: str) -> None:
    """Every field of ``section`` in its range (the backstop for flags and ``replace``)."""
    for f in fields(section):
        check_value(getattr(section, f.name), f, f"{name}.{f.name}")


def check_value(value: Any, f: Field[Any], where: str) -> Any:
    """``value`` if it is in the field's range or bounds; SettingsError naming ``where``."""
    try:
        if "range" in f.metadata:
            low, high = f.metadata["range"]
            if isinstance(value, str):  # text is parsed where it enters (cluster.ground.parse)
                raise ParseError(f"{where}: expected a number, got {value[:40]!r}")
            if isinstance(low, float):
                return float_value(
                    value, low=low, high=high, what=where, low_open=f.metadata["low_open"]
                )
            return int_value(value, low=low, high=high, what=where)
    except ParseError as exc:
        raise SettingsError(str(exc)) from None
    for text in value if isinstance(value, tuple) else (value,):
        if isinstance(text, str) and (len(text) > MAX_TEXT or "\x00" in text):
            raise SettingsError(f"{where}: longer than {MAX_TEXT} characters or holds a NUL")
        if f.metadata.get("path") and os.path.expanduser(str(Path(str(text))))[:1] == "~":
            raise SettingsError(f"{where}: {shown(text)} names no user's home directory")
    if isinstance(value, tuple) and len(value) > MAX_ITEMS:
        raise SettingsError(f"{where}: more than {MAX_ITEMS} entries")
    return value
