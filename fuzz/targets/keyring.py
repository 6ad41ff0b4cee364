"""Target ``keyring``: a keyring file's bytes through ``swim.keyring.load_keyring``.

Only ``ValueError`` may come out (rule 4), and its message never shows a key: no base64 line of
the file appears in it.
"""

from __future__ import annotations

import atexit
import os
import tempfile

from swim.keyring import load_keyring

_DIR = "/dev/shm" if os.path.isdir("/dev/shm") else None  # a file in memory: fast
_FD, PATH = tempfile.mkstemp(prefix="rtsim-fuzz-keyring-", dir=_DIR)
os.close(_FD)
atexit.register(os.unlink, PATH)


def test_one_input(data: bytes) -> bool:
    with open(PATH, "wb") as f:
        f.write(data)
    try:
        load_keyring(PATH)
    except ValueError as exc:
        message = str(exc)
        for line in data.decode("ascii", "replace").splitlines():
            line = line.strip()
            assert len(line) < 16 or line not in message, "a key line shown in an error"
        return False
    return True
