"""Real Serf agents beside rtsim nodes (``rt_cluster up --serf M``): the agent's command line,
its configuration file, which members a starting member joins through, and what an agent
sees (``serf members``).

Rules:
1. An agent is ``serf agent -node serf-<i> -bind HOST:GOSSIP -rpc-addr HOST:RPC -join ...
   -log-level=info`` on Serf's default profile (lan). A keyed cluster's gossip key (the first
   key of its keyring file) reaches the agents through ``serf-agent.json`` (mode 0600,
   ``encrypt_key``: what ``-encrypt`` sets), never on a command line, which every user of the
   host can read.
2. A starting member joins through members that answer already (their record says
   ``running`` and their process is alive): node 0 first, at most ``MAX_JOINS`` of them; a
   member started first joins nobody. Serf's ``-join`` succeeds when one of them answers.
3. What an agent sees is ``serf members -format=json`` through its RPC address, bounded by a
   timeout; any failure (no answer, bad JSON, serf missing) is ``SerfUnavailable``.
4. Nothing here signals a process or changes the record.
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .record import AgentRecord, BadInput, ClusterError, ClusterRecord, NodeRecord

__all__ = [
    "AGENT_CONFIG",
    "MAX_JOINS",
    "SERF",
    "SerfUnavailable",
    "agent_command",
    "agent_record",
    "all_members",
    "gossip_address",
    "gossip_key",
    "join_addresses",
    "member_name",
    "member_names",
    "parse_members",
    "serf_binary",
    "serf_members",
    "write_agent_config",
]

SERF = "serf"  # the agent's program, looked up on PATH
AGENT_CONFIG = "serf-agent.json"  # in the cluster directory (rule 1)
MAX_JOINS = 3  # members one starting member joins through (rule 2)
MEMBERS_TIMEOUT = 5.0  # seconds ``serf members`` gets to answer
MAX_ANSWER = 16 * 1024 * 1024  # bytes of ``serf members`` output read


class SerfUnavailable(ClusterError):
    """An agent did not say whom it sees: no answer, an unreadable one, or no serf at all."""


def serf_binary() -> str:
    """The path of ``serf``; BadInput when it is not on PATH."""
    path = shutil.which(SERF)
    if path is None:
        raise BadInput(
            "--serf: no 'serf' program on PATH (Debian: apt-get install serf); "
            "a cluster with Serf agents needs it"
        )
    return path


def agent_record(
    directory: Path, index: int, gossip_port: int, rpc_port: int, host: str
) -> AgentRecord:
    """The record of agent ``index`` before it starts: named ``serf-<index>``, its log
    ``<directory>/serf-<index>.log``."""
    return AgentRecord(
        index=index,
        name=f"serf-{index}",
        pid=0,
        gossip_port=gossip_port,
        rpc_addr=f"{host}:{rpc_port}",
        log=str(directory / f"serf-{index}.log"),
        state="starting",
        host=host,
    )


def member_name(member: NodeRecord | AgentRecord) -> str:
    """``rt-<id>`` for an rtsim node, the agent's own name (``serf-<index>``) for an agent."""
    return member.name if isinstance(member, AgentRecord) else f"rt-{member.node_id}"


def member_names(record: ClusterRecord) -> set[str]:
    """The names of every member of the record, nodes and agents."""
    return {member_name(m) for m in all_members(record)}


def all_members(record: ClusterRecord) -> list[NodeRecord | AgentRecord]:
    """The record's nodes, then its agents: members in the order of their numbers."""
    return [*record.nodes, *record.agents]


def gossip_key(keyring: str | Path) -> str:
    """The key that seals: the first key line of a keyring file (comments and blank lines
    skipped); ClusterError when it has none."""
    try:
        lines = Path(keyring).read_text().splitlines()
    except OSError as exc:
        raise ClusterError(f"keyring {keyring}: cannot be read ({exc.strerror})") from None
    for line in lines:
        if line.strip() and not line.lstrip().startswith("#"):
            return line.strip()
    raise ClusterError(f"keyring {keyring}: holds no key")


def write_agent_config(directory: Path, keyring: str) -> Path:
    """``<directory>/serf-agent.json`` for every agent (rule 1): the gossip key of ``keyring``
    when there is one, else an empty configuration. Mode 0600, written whole, then renamed."""
    body: dict[str, Any] = {"encrypt_key": gossip_key(keyring)} if keyring else {}
    path = directory / AGENT_CONFIG
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, json.dumps(body).encode() + b"\n")
    finally:
        os.close(fd)
    os.replace(tmp, path)
    return path


def agent_command(
    record: ClusterRecord, agent: AgentRecord, joins: Sequence[str], *, serf: str
) -> list[str]:
    """The command line of ``agent`` (rule 1), joining through ``joins`` (``host:port``)."""
    return [
        serf,
        "agent",
        "-node",
        agent.name,
        "-bind",
        agent.gossip_addr,
        "-rpc-addr",
        agent.rpc_addr,
        *(arg for address in joins for arg in ("-join", address)),
        "-log-level=info",
        f"-config-file={Path(record.directory) / AGENT_CONFIG}",
    ]


def join_addresses(
    record: ClusterRecord, me: NodeRecord | AgentRecord, live: Callable[[Any], bool]
) -> list[str]:
    """Where ``me`` joins (rule 2): the gossip addresses of at most ``MAX_JOINS`` other
    members that answer (``running`` in the record and ``live`` by their process), node 0
    first, then the other nodes, then the agents."""
    name = member_name(me)
    answering = (
        gossip_address(record, m)
        for m in all_members(record)
        if m.state == "running" and member_name(m) != name and live(m)
    )
    return list(itertools.islice(answering, MAX_JOINS))


def gossip_address(record: ClusterRecord, member: NodeRecord | AgentRecord) -> str:
    """``host:port`` where the member gossips (a node's runtime port, an agent's bind)."""
    if isinstance(member, AgentRecord):
        return member.gossip_addr
    return f"{record.host_of(member)}:{member.runtime_port}"


def serf_members(rpc_addr: str, timeout: float = MEMBERS_TIMEOUT, serf: str = "") -> dict[str, str]:
    """What the agent at ``rpc_addr`` sees: member name -> status (``alive``, ``failed``,
    ``leaving``, ``left``, ...), from ``serf members -format=json``; SerfUnavailable when it
    does not answer within ``timeout`` seconds or the answer is not that shape."""
    argv = [serf or shutil.which(SERF) or SERF, "members", "-format=json", f"-rpc-addr={rpc_addr}"]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise SerfUnavailable(f"serf agent at {rpc_addr}: no answer within {timeout:g}s") from None
    except OSError as exc:
        raise SerfUnavailable(f"cannot run {argv[0]}: {exc.strerror}") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise SerfUnavailable(f"serf agent at {rpc_addr}: {why[-1] if why else 'no answer'}")
    return parse_members(done.stdout[:MAX_ANSWER], rpc_addr)


def parse_members(raw: bytes, source: str = "serf members") -> dict[str, str]:
    """Name -> status from the JSON ``serf members -format=json`` prints; SerfUnavailable for
    anything else."""
    try:
        body = json.loads(raw)
        found = {m["name"]: m["status"] for m in body["members"]}
    except (ValueError, KeyError, TypeError) as exc:
        raise SerfUnavailable(f"{source}: not a member list ({exc})") from None
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in found.items()):
        raise SerfUnavailable(f"{source}: member names and statuses are not strings")
    return found
