"""A pre-imported parent that forks node processes, so a large local cluster pays the node's
imports (about 0.6 s of CPU each, mostly the HTTP stack) once instead of once per node.

Protocol, one JSON object per line: the launcher writes ``{"argv": [...], "log": path}`` on
stdin (``argv`` as for ``rt_run``), the zygote answers ``{"pid": n}`` or ``{"error": "..."}``
on stdout. End of stdin ends the zygote; the nodes it forked live on in their own sessions.

Rules:
1. The zygote never runs trio: a child starts its own ``trio.run`` from a clean state.
2. A child owns nothing of the zygote's: new session, stdin from /dev/null, stdout and stderr
   appended to its log, default signal dispositions.
3. While the zygote lives, SIGCHLD is ignored so exited nodes leave no zombies behind.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import traceback
from typing import Any

__all__ = ["main"]


def _preload() -> None:
    import cluster.node.cli  # noqa: F401
    from cluster.node.process import preload

    preload()


def _child(request: dict[str, Any]) -> None:
    """Become the node process; never returns."""
    code = 1
    try:
        os.setsid()
        for sig in (signal.SIGCHLD, signal.SIGINT, signal.SIGTERM, signal.SIGPIPE):
            signal.signal(sig, signal.SIG_DFL)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        log = os.open(str(request["log"]), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        os.close(null)
        os.close(log)
        from cluster.node.cli import main as rt_run

        code = rt_run([str(a) for a in request["argv"]])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def main() -> int:
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    for line in sys.stdin:
        try:
            request = json.loads(line)
            if not isinstance(request, dict) or not isinstance(request.get("argv"), list):
                raise ValueError('expected {"argv": [...], "log": path}')
            sys.stdout.flush()
            pid = os.fork()
            if pid == 0:
                _child(request)
            reply: dict[str, Any] = {"pid": pid}
        except (ValueError, OSError) as exc:
            reply = {"error": str(exc)}
        print(json.dumps(reply), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
