"""``rt_run``'s commands that talk to a running node: ``stop``, ``compose``, ``migrate`` and
``monitor``, each through the one RPC client (``cluster.rpc.rpc_call``).

Rules:
1. The node is found by its runtime port on its runtime address (``--host``, ``--port``, else
   the settings' ``networking``), asked on the loopback by default.
2. A node that does not answer is ``no node is running at HOST:PORT`` with the transport's
   own error; a refusal is the node's message. Both are a ``CliError`` (exit status 1).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import psutil
import trio

from cluster.ground.errors import ApiError, PeerUnreachable
from cluster.ground.safeyaml import YamlError, YamlTooLarge, load_file
from cluster.rpc import Call, Compose, Migrate, Monitor, PeerTimeout, Pools, Stop, rpc_call

from .flags import settings_of

__all__ = [
    "RPC_TIMEOUT",
    "CliError",
    "cmd_compose",
    "cmd_migrate",
    "cmd_monitor",
    "cmd_stop",
    "stop_node",
]

RPC_TIMEOUT = 5.0  # seconds: one request to the local node


class CliError(Exception):
    """A message for stderr and a non-zero exit."""


def _target(args: argparse.Namespace) -> tuple[str, int]:
    s = settings_of(args)
    return s.networking.host, s.networking.port


def _call(args: argparse.Namespace, request: Call, timeout: float = RPC_TIMEOUT) -> Any:
    host, port = _target(args)
    try:
        return trio.run(rpc_call, host, port, request, timeout)
    except (PeerUnreachable, PeerTimeout) as exc:
        cause = exc.__cause__ or exc  # the transport's own error, as the user knows it
        raise CliError(
            f"no node is running at {host}:{port} ({cause.__class__.__name__}: {cause})"
        ) from None
    except ApiError as exc:
        raise CliError(f"node at {host}:{port}: {exc.message}") from None


def stop_node(args: argparse.Namespace, quiet_if_none: bool = False) -> int:
    host, port = _target(args)
    try:
        ident = _call(args, Stop())
    except CliError:
        if quiet_if_none:
            return 0
        raise CliError(f"no node is running at {host}:{port}") from None
    pid = int(ident["pid"])
    deadline = time.monotonic() + args.timeout
    while psutil.pid_exists(pid) and time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.05)
    if psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        raise CliError(f"node {ident['node_id']} (pid {pid}) did not stop within {args.timeout:g}s")
    print(f"stopped node {ident['node_id']} (pid {pid}) at {host}:{port}")
    return 0


def cmd_stop(args: argparse.Namespace) -> int:
    return stop_node(args)


def cmd_compose(args: argparse.Namespace) -> int:
    if args.file == "list":
        body = _call(args, Pools())
        for p in body["pools"]:
            print(f"{p['pool_id']:>10}  {p['mod_name']:<14} {p['pool_name']}")
        return 0
    path = Path(args.file)
    try:
        data = load_file(path)
    except OSError as exc:
        raise CliError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except YamlTooLarge as exc:
        raise CliError(f"{path}: {exc}, the limit of a compose file") from None
    except YamlError as exc:
        raise CliError(f"{path}: not valid YAML: {exc}") from None
    entries = data.get("compose") if isinstance(data, dict) else data
    if not isinstance(entries, list):
        raise CliError(f"{path}: expected a compose section (a list of pool entries)")
    failed = 0
    for i, entry in enumerate(entries):
        try:
            body = _call(args, Compose((entry,)))
            r = body["results"][0]
            print(f"composed {r['pool_name']} ({r['pool_id']})")
        except CliError as exc:
            failed += 1
            print(f"{path}: compose[{i}]: {exc}", file=sys.stderr)
    return 1 if failed else 0


def cmd_migrate(args: argparse.Namespace) -> int:
    body = _call(args, Migrate(args.pool, args.to), timeout=15.0)
    print(f"moved pool {body['pool_id']} to node {body['to']}")
    return 0


def _monitor_once(args: argparse.Namespace) -> dict[str, Any]:
    workers = _call(args, Monitor("workers"))
    containers = _call(args, Monitor("containers"))
    return {
        "node_id": workers["node_id"],
        "workers": workers["workers"],
        "pools": containers["containers"],
    }


def _print_monitor(snap: dict[str, Any]) -> None:
    print(f"node {snap['node_id']}  {time.strftime('%H:%M:%S')}")
    print(
        f"{'worker':>6} {'active':>6} {'queued':>6} {'blocked':>7} {'periodic':>8} {'retry':>5} "
        f"{'processed':>9} {'load_us':>9}"
    )
    for w in snap["workers"]:
        print(
            f"{w['worker_id']:>6} {'yes' if w['is_active'] else 'no':>6} "
            f"{w['num_queued_tasks']:>6} "
            f"{w['num_blocked_tasks']:>7} {w['num_periodic_tasks']:>8} {w['num_retry_tasks']:>5} "
            f"{w['num_tasks_processed']:>9} {w['load'] or 0:>9.0f}"
        )
    print(f"{'pool':>10}  {'module':<14} {'name':<16} methods (cpu coef / mape, trained only)")
    for p in snap["pools"]:
        methods = ", ".join(
            f"{m['name']} {m['coefficient']:.1f}/{m['mape']:.1f}%"
            for m in p["methods"]
            if m.get("trained")
        )
        print(f"{p['pool_id']:>10}  {p['mod_name']:<14} {p['pool_name']:<16} {methods or '-'}")


def cmd_monitor(args: argparse.Namespace) -> int:
    while True:
        snap = _monitor_once(args)
        if args.json:
            print(json.dumps(snap), flush=True)
        else:
            _print_monitor(snap)
            print(flush=True)
        if args.once:
            return 0
        time.sleep(args.interval)
