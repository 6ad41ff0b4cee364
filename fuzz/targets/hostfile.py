"""Target ``hostfile``: a hostfile's bytes through ``cluster.hosts.hostfile.parse_hostfile_text``.

Only ``SettingsError`` may come out (rule 3); every entry it accepts is a host (not empty, no
NUL, no line break) and a port from 1 to 65535.
"""

from __future__ import annotations

from cluster.ground.errors import SettingsError
from cluster.hosts.hostfile import parse_hostfile_text


def test_one_input(data: bytes) -> bool:
    try:
        entries = parse_hostfile_text(data, "fuzz-hosts", 9413)
    except SettingsError:
        return False
    for host, port in entries:
        assert host, entries
        assert not set(host) & set("\x00\r\n#"), host
        assert 1 <= port <= 65535, port
    return True
