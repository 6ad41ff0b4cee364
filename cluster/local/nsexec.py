"""Run a program inside a network namespace: ``python -I nsexec.py NSPATH PROGRAM [ARG...]``.

Rules:
1. A script run by path, standard library only: it pays no import of the project, and the
   program it becomes (a node zygote) starts as it would anywhere else.
2. It enters the namespace (``setns`` on the file ``NSPATH``, e.g. /run/netns/NAME) and then
   execs ``PROGRAM``: the same process, so the pid its starter recorded is the program's.
3. A failure is one line on stderr and exit status 1; nothing runs outside the namespace.
"""

from __future__ import annotations

import ctypes
import os
import sys

CLONE_NEWNET = 0x40000000


def _setns(fd: int) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(fd, CLONE_NEWNET) != 0:
        code = ctypes.get_errno()
        raise OSError(code, os.strerror(code))


def main(argv: list[str]) -> int:
    if len(argv) < 3:
        print("usage: nsexec.py NSPATH PROGRAM [ARG...]", file=sys.stderr)
        return 1
    path, program = argv[1], argv[2:]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        try:
            _setns(fd)
        finally:
            os.close(fd)
        os.execv(program[0], program)
    except OSError as exc:
        print(f"nsexec: {path}: {exc.strerror or exc}", file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
