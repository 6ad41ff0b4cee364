"""Placement under mpirun or srun (``cluster.node.ranks``), the advertised address
(``cluster.hosts.hostfile``) and the ``advertise`` setting: pure decisions, no processes.

The machine is a fake (``Machine`` with its names, addresses and a table for a resolver), so
every case is the same on any host.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from cluster.ground.errors import SettingsError
from cluster.ground.settings import NetworkingSettings, Settings, VizSettings, load_settings
from cluster.hosts import Machine, advertised_host, is_wildcard, resolve_identity
from cluster.node.cli import main
from cluster.node.ranks import (
    PORT_FLAG,
    Placement,
    choose_placement,
    launch_rank,
    place_node,
)

HOSTFILE = "/cluster/hosts"
LOOP4 = [("127.0.0.1", 9401), ("127.0.0.1", 9402), ("127.0.0.1", 9403), ("127.0.0.1", 9404)]
DNS: Mapping[str, tuple[str, ...]] = {
    "127.0.0.1": ("127.0.0.1",),
    "localhost": ("127.0.0.1", "::1"),
    "node-a": ("10.0.0.1",),
    "node-b": ("10.0.0.2",),
    "10.0.0.1": ("10.0.0.1",),
    "10.0.0.2": ("10.0.0.2",),
    "gateway-name": ("203.0.113.9",),  # this host's name, resolving to a NAT's address
}
HERE = Machine(
    frozenset({"node-a", "node-a.example.org", "gateway-name"}),
    frozenset({"127.0.0.1", "::1", "10.0.0.1"}),
    lambda host: DNS.get(host, ()),
)
OMPI = {"OMPI_COMM_WORLD_RANK": "2", "OMPI_COMM_WORLD_LOCAL_RANK": "2"}


def settings(
    *,
    hostfile: str = HOSTFILE,
    viz_port: int = 8080,
    origins: Mapping[str, str] | None = None,
    **net: Any,
) -> Settings:
    """Settings as loaded, with ``origins`` saying where values came from."""
    return Settings(
        networking=NetworkingSettings(hostfile=hostfile, **net),
        viz=VizSettings(enabled=True, port=viz_port),
        origins=dict(origins or {}),
    )


# -- the rank variables -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "rank", "variable", "local", "local_variable"),
    [
        (OMPI, 2, "OMPI_COMM_WORLD_RANK", 2, "OMPI_COMM_WORLD_LOCAL_RANK"),
        ({"PMI_RANK": "5", "MPI_LOCALRANKID": "1"}, 5, "PMI_RANK", 1, "MPI_LOCALRANKID"),
        ({"SLURM_PROCID": "7", "SLURM_LOCALID": "3"}, 7, "SLURM_PROCID", 3, "SLURM_LOCALID"),
        # mpirun inside a Slurm batch script: every rank inherits the batch step's SLURM_PROCID=0
        ({**OMPI, "SLURM_PROCID": "0", "SLURM_LOCALID": "0"}, 2, "OMPI_COMM_WORLD_RANK", 2,
         "OMPI_COMM_WORLD_LOCAL_RANK"),
        # the local rank comes from the same launcher, never from another one's variable
        ({"PMI_RANK": "4", "SLURM_LOCALID": "3"}, 4, "PMI_RANK", 0, ""),
        ({"OMPI_COMM_WORLD_RANK": "", "SLURM_PROCID": "1"}, 1, "SLURM_PROCID", 0, ""),
    ],
)  # fmt: skip
def test_the_first_launchers_variables_give_rank_and_local_rank(
    env: Mapping[str, str], rank: int, variable: str, local: int, local_variable: str
) -> None:
    found = launch_rank(env)
    assert found is not None
    assert (found.rank, found.variable) == (rank, variable)
    assert (found.local_rank, found.local_variable) == (local, local_variable)


def test_no_launcher_no_rank() -> None:
    assert launch_rank({}) is None
    assert launch_rank({"OMPI_COMM_WORLD_SIZE": "4", "SLURM_PROCID": ""}) is None


@pytest.mark.parametrize("raw", ["01", "-1", "x", " 1", "1 ", "+1", "\uff11", "1e3", "2147483648"])
@pytest.mark.parametrize("name", ["OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"])
def test_a_malformed_variable_is_one_error_naming_it(raw: str, name: str) -> None:
    env = {**OMPI, name: raw}
    with pytest.raises(SettingsError, match=f"^{name}=") as info:
        launch_rank(env)
    assert "\n" not in str(info.value)


# -- choosing the entry ---------------------------------------------------------------------------


def test_rank_takes_its_entry_and_the_dashboard_port_moves_by_local_rank() -> None:
    p = choose_placement(OMPI, settings(), LOOP4, HERE)
    assert p is not None
    assert (p.rank.rank, p.entry, p.host, p.port, p.advertise) == (
        2, ("127.0.0.1", 9403), "127.0.0.1", 9403, ""
    )  # fmt: skip
    assert p.viz_port == 8082
    line = p.describe(HOSTFILE)
    assert line.startswith(
        f"rank 2 (OMPI_COMM_WORLD_RANK) takes hostfile {HOSTFILE} entry 2 (127.0.0.1:9403): "
        "node 2 binds 127.0.0.1:9403; dashboard port 8082"
    )


def test_viz_port_zero_stays_zero_and_past_the_last_port_is_an_error() -> None:
    p = choose_placement(OMPI, settings(viz_port=0), LOOP4, HERE)
    assert p is not None
    assert p.viz_port == 0
    with pytest.raises(SettingsError, match=r"viz\.port 65534 \+ local rank 2 is past 65535"):
        choose_placement(OMPI, settings(viz_port=65534), LOOP4, HERE)


@pytest.mark.parametrize("count", [0, 1, 2])
def test_a_rank_without_an_entry_names_the_hostfile_and_its_size(count: int) -> None:
    with pytest.raises(SettingsError) as info:
        choose_placement(OMPI, settings(), LOOP4[:count], HERE)
    noun = "entry" if count == 1 else "entries"
    assert str(info.value) == (
        f"rank 2 (OMPI_COMM_WORLD_RANK) has no entry in hostfile {HOSTFILE}: it has {count} "
        f"{noun}; start at most {count} processes, or add entries"
    )


def test_an_entry_of_another_host_names_rank_entry_and_host() -> None:
    entries = [("node-a", 9413), ("node-a", 9414), ("node-b", 9413)]
    with pytest.raises(SettingsError) as info:
        choose_placement(OMPI, settings(), entries, HERE)
    message = str(info.value)
    assert message.startswith(
        f"rank 2 (OMPI_COMM_WORLD_RANK) takes hostfile {HOSTFILE} entry 2, node-b:9413, which "
        "does not name this host (node-a, addresses 10.0.0.1)"
    )
    unresolved = [("nowhere.invalid", 9413)] * 3
    with pytest.raises(SettingsError, match=r"nowhere\.invalid:9413, which does not name"):
        choose_placement(OMPI, settings(), unresolved, HERE)


def test_an_entry_naming_this_host_by_address_binds_it() -> None:
    entries = [("node-b", 9413), ("node-b", 9414), ("node-a", 9415)]
    p = choose_placement(OMPI, settings(), entries, HERE)
    assert p is not None
    assert (p.host, p.port, p.advertise) == ("node-a", 9415, "")


def test_an_entry_naming_this_host_only_by_name_is_advertised_not_bound() -> None:
    entries = [("node-b", 9413), ("node-b", 9414), ("gateway-name", 9415)]
    p = choose_placement(OMPI, settings(host="0.0.0.0"), entries, HERE)
    assert p is not None
    assert (p.host, p.port, p.advertise) == ("0.0.0.0", 9415, "gateway-name")


def test_a_wildcard_host_and_an_explicit_advertise_are_kept() -> None:
    entries = [("x", 1), ("y", 2), ("10.0.0.1", 9415)]
    p = choose_placement(OMPI, settings(host="0.0.0.0"), entries, HERE)
    assert p is not None
    assert (p.host, p.advertise) == ("0.0.0.0", "10.0.0.1")
    p = choose_placement(OMPI, settings(advertise="node-a.example.org"), entries, HERE)
    assert p is not None
    assert (p.host, p.advertise) == ("10.0.0.1", "node-a.example.org")


@pytest.mark.parametrize(
    ("env", "s"),
    [
        ({}, settings()),
        (OMPI, settings(node_id=1)),  # --node-id places the node
        (OMPI, settings(hostfile="")),  # no hostfile: nothing to choose from
        (OMPI, settings(port=9500, origins={"networking.port": "flag --port"})),  # rt_cluster
    ],
    ids=["no-launcher", "node-id", "no-hostfile", "port-flag"],
)
def test_the_rank_places_only_what_nothing_else_placed(env: Mapping[str, str], s: Settings) -> None:
    assert choose_placement(env, s, LOOP4, HERE) is None
    assert place_node(s, env, lambda: HERE) is s


def test_the_port_flags_origin_is_the_one_ranks_looks_for() -> None:
    s = load_settings("daemon", env={}, flags={"port": 9500})
    assert s.origin("networking.port") == PORT_FLAG


def test_a_port_from_the_file_does_not_stop_the_rank() -> None:
    s = settings(port=9500, origins={"networking.port": "file /etc/rt.yaml"})
    assert isinstance(choose_placement(OMPI, s, LOOP4, HERE), Placement)


def test_place_node_reads_the_hostfile_records_origins_and_logs_one_line(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# four on this host\n" + "".join(f"{h}:{p}\n" for h, p in LOOP4))
    s = settings(hostfile=str(hostfile))
    with caplog.at_level(logging.INFO, logger="cluster.node.ranks"):
        placed = place_node(s, OMPI, lambda: HERE)
    net = placed.networking
    assert (net.node_id, net.host, net.port, net.advertise) == (2, "127.0.0.1", 9403, "")
    assert placed.viz.port == 8082
    origin = "launcher: rank 2 (OMPI_COMM_WORLD_RANK), hostfile entry 2"
    assert placed.origin("networking.node_id") == placed.origin("networking.port") == origin
    assert placed.origin("networking.host") == "default"  # unchanged: 127.0.0.1 already
    assert (
        placed.origin("viz.port") == "launcher: viz.port + local rank (OMPI_COMM_WORLD_LOCAL_RANK)"
    )
    lines = [r.getMessage() for r in caplog.records if r.name == "cluster.node.ranks"]
    assert len(lines) == 1
    assert "takes hostfile" in lines[0]
    assert "entry 2 (127.0.0.1:9403)" in lines[0]
    # placed once, a second look changes nothing (run_node places, then open_node looks again)
    assert place_node(placed, OMPI, lambda: HERE) is placed
    # the placed node finds its own entry and joins through the three others
    assert resolve_identity(placed, induct=False) == (2, [LOOP4[0], LOOP4[1], LOOP4[3]])


def test_place_node_on_this_real_machine_takes_a_loopback_entry(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("localhost:9401\n127.0.0.1:9402\n")
    env = {"SLURM_PROCID": "0", "SLURM_LOCALID": "0"}
    placed = place_node(settings(hostfile=str(hostfile)), env)  # Machine.here(): the real one
    assert (placed.networking.node_id, placed.networking.host, placed.networking.port) == (
        0, "localhost", 9401
    )  # fmt: skip


# -- the advertised address -----------------------------------------------------------------------


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "[::]", ""])
def test_a_wildcard_host_needs_an_advertised_address(host: str) -> None:
    assert is_wildcard(host)
    with pytest.raises(SettingsError, match=r"binds every address, which peers cannot use: set "
                       r"networking\.advertise \(--advertise ADDR\)"):  # fmt: skip
        advertised_host(NetworkingSettings(host=host))
    assert advertised_host(NetworkingSettings(host=host, advertise="10.0.0.1")) == "10.0.0.1"


def test_the_advertised_address_defaults_to_the_bound_host() -> None:
    assert advertised_host(NetworkingSettings()) == "127.0.0.1"
    assert advertised_host(NetworkingSettings(host="node-a")) == "node-a"
    assert not is_wildcard("127.0.0.1")
    assert not is_wildcard("node-a")


@pytest.mark.parametrize("bad", ["999.1.1.1", "1.2.3", "fe80:::1", "1:2:3:4:5:6:7:8:9"])
def test_an_advertised_literal_must_be_a_valid_address(bad: str) -> None:
    with pytest.raises(SettingsError, match="is not a valid IP address"):
        advertised_host(NetworkingSettings(advertise=bad))


@pytest.mark.parametrize("wild", ["0.0.0.0", "::"])
def test_a_wildcard_is_never_advertised(wild: str) -> None:
    with pytest.raises(SettingsError, match="is a wildcard"):
        advertised_host(NetworkingSettings(advertise=wild))


def test_own_entry_is_found_by_the_advertised_address(tmp_path: Path) -> None:
    hostfile = tmp_path / "hosts"
    hostfile.write_text("10.0.0.1:9413\n10.0.0.2:9413\n")
    net = NetworkingSettings(host="0.0.0.0", advertise="10.0.0.2", hostfile=str(hostfile))
    assert resolve_identity(Settings(networking=net), induct=False) == (1, [("10.0.0.1", 9413)])


# -- the setting ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "good", ["10.0.0.1", "fd00::2", "node-a", "node-a.example.org.", "x" * 63 + ".org"]
)
def test_advertise_accepts_an_address_or_a_host_name(good: str) -> None:
    assert NetworkingSettings(advertise=good).advertise == good


@pytest.mark.parametrize(
    "bad", ["a b", "-node", "node-", "a..b", "x" * 64, "http://x", "node:80", "1.2.3.4:80", "é"]
)
def test_advertise_refuses_what_is_no_address(bad: str) -> None:
    with pytest.raises(SettingsError, match=r"networking\.advertise: expected an address or host"):
        NetworkingSettings(advertise=bad)


def test_advertise_from_file_and_flag(tmp_path: Path) -> None:
    conf = tmp_path / "rt.yaml"
    conf.write_text("networking: {advertise: node-a}\n")
    s = load_settings("daemon", env={}, config_file=conf)
    assert (s.networking.advertise, s.origin("networking.advertise")) == ("node-a", f"file {conf}")
    s = load_settings("daemon", env={}, flags={"advertise": "10.0.0.9"}, config_file=conf)
    assert (s.networking.advertise, s.origin("networking.advertise")) == (
        "10.0.0.9", "flag --advertise"
    )  # fmt: skip
    conf.write_text("networking: {advertise: 'no such thing'}\n")
    with pytest.raises(SettingsError, match=f"^{conf}: networking.advertise: expected an address"):
        load_settings("daemon", env={}, config_file=conf)
    assert replace(s.networking, advertise="").advertise == ""


def test_rt_run_refuses_a_bad_advertise_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("RT_SERVER_CONF", raising=False)
    assert main(["config", "export", "--advertise", "not an address"]) == 2
    err = capsys.readouterr().err
    assert err == (
        "rt_run: networking.advertise: expected an address or host name, got 'not an address'\n"
    )
    assert main(["config", "export", "--advertise", "node-a"]) == 0
    assert "advertise: node-a" in capsys.readouterr().out
