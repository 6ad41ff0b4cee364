"""A pre-imported parent that forks node processes, so a local cluster pays the node's imports
(about 0.6 s of CPU, mostly the HTTP stack) once instead of once per node, and a watcher per
node that records it before it runs and records how it ended.

Protocol, one JSON object per line: the launcher writes
``{"argv": [...], "log": path, "procs": dir, "tag": {...}}`` on stdin (``argv`` as for
``rt_run``; ``tag`` is copied into the process record), the zygote answers
``{"pid": n, "started": ticks}`` or ``{"error": "..."}`` on stdout. End of stdin ends the
zygote once the fork in flight is recorded; the nodes it forked live on.

The process record ``<procs>/<pid>.json`` (written whole, then renamed)::

    {"pid": n, "started": ticks, "watcher": n, "watcher_started": ticks, "argv": [...],
     "log": path, "tag": {...}, "exit": null}

and once the node has ended, the same with ``"exit": {"code": int | null, "signal": "SIGKILL"
| "", "last_line": str, "at": epoch seconds}``. ``started`` is the start time in clock ticks
since boot (``/proc/<pid>/stat`` field 22), which tells a reused pid apart.

Rules:
1. The zygote never runs trio: a node starts its own ``trio.run`` from a clean state.
2. A node is recorded before it runs: its watcher forks it, writes the record, and only then
   lets it go; a node whose watcher is gone before that exits without running. Whoever asked
   for it may die at any moment (a ``kill -9`` of ``rt_cluster up``) and the records still
   name every node.
3. A node starts with a fresh interpreter's signal dispositions: SIGPIPE (and SIGXFSZ)
   ignored, so a write to a socket its peer closed is an ``EPIPE`` error and never kills it;
   SIGINT raises KeyboardInterrupt; SIGTERM, SIGHUP and SIGCHLD default. It leads its own
   session (its pid is its process group), stdin from /dev/null, stdout and stderr appended
   to its log.
4. The watcher is the node's parent and lives in another session, so signals sent to the
   node's process group never reach it; it ignores SIGINT, SIGTERM and SIGHUP, reaps the
   node, records how it ended, appends one line saying so to the log, and exits.
5. The zygote ignores SIGCHLD (its watchers leave no zombies) and SIGINT (a Ctrl-C meant for
   ``rt_cluster`` must not cut a fork in half).
6. Pages stay shared: the zygote does once what every node would (imports, including the
   modules' code; the scan of installed modules; ``rt_run``'s parser), with the cyclic
   collector off (no freed holes for a node's first allocations to land in), and freezes every
   object it holds before each fork (``gc.freeze``), so a node's collections never write to
   the zygote's objects; only the node turns the collector back on. Before each fork it also
   parses the node's command line and reads its settings (``cli.prepare``): the node starts
   from them instead of writing its own copy of the pages that work touches (a command line
   it cannot prepare, the node parses itself and reports as ``rt_run`` does). What a node
   still keeps to itself is mostly the pages of the code it runs: CPython 3.11 counts
   references in the objects, so running a function copies the page its code object and
   constants sit on.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import signal
import socket
import sys
import time
import traceback
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from cluster.node.cli import Prepared

__all__ = ["main"]

GO = b"g"  # watcher -> node: you are recorded, run
READY = b"s"  # node -> watcher: I lead my own session now


def _preload() -> None:
    from cluster.node.cli import cached_parser
    from cluster.node.process import preload

    preload()
    cached_parser()  # built here, shared by every node (rule 6)
    # numpy (the storage modules' erasure coding, loaded on first use) costs a node that codes
    # about 16 MB; imported here it is shared. Its BLAS must start no thread of its own, which
    # a fork would not carry: one thread is what cluster.storage asks for too.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    with contextlib.suppress(ImportError):
        import numpy  # noqa: F401


def _start_ticks(pid: int) -> int:
    """The start time of ``pid`` in clock ticks since boot; 0 when there is no such process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return 0
    return int(data[data.rindex(b")") + 2 :].split()[19])


def _write_record(procs: str, doc: dict[str, Any]) -> None:
    path = Path(procs) / f"{doc['pid']}.json"
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(doc) + "\n")
    os.replace(tmp, path)


def _last_line(log: str) -> str:
    """The last non-blank line of the log (at most 300 characters)."""
    try:
        with open(log, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 8192))
            lines = f.read().decode(errors="replace").splitlines()
    except OSError:
        return ""
    return next((line.strip()[:300] for line in reversed(lines) if line.strip()), "")


def _ending(status: int, log: str) -> dict[str, Any]:
    last = _last_line(log)  # read before the watcher adds its own line
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.valid_signals() else f"signal {sig}"
        return {"code": None, "signal": name, "last_line": last, "at": time.time()}
    return {
        "code": os.waitstatus_to_exitcode(status),
        "signal": "",
        "last_line": last,
        "at": time.time(),
    }


# ---- the node -------------------------------------------------------------------------------


def _fresh_signals() -> None:
    """The dispositions a newly started Python process has (rule 3)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for sig in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(sig, signal.SIG_IGN)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)


def _node(request: dict[str, Any], prepared: Prepared | None, watcher: socket.socket) -> NoReturn:
    """Become the node process once the watcher has recorded it; never returns."""
    code = 1
    try:
        os.setsid()
        watcher.sendall(READY)
        if watcher.recv(1) != GO:  # the watcher could not record us, or is gone
            os._exit(1)
        watcher.close()
        _fresh_signals()
        gc.enable()  # rule 6: off in the zygote and the watcher, on in the node
        from cluster.node.cli import main as rt_run

        code = rt_run([str(a) for a in request["argv"]], prepared)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


# ---- the watcher ----------------------------------------------------------------------------


def _detach(log: str) -> None:
    """A session of its own, no terminal signals, stdin from /dev/null, output to the log (the
    zygote's pipes to the launcher, its descriptors 0 and 1, are replaced)."""
    os.setsid()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # inherited SIG_IGN would make waitpid fail
    null = os.open(os.devnull, os.O_RDONLY)
    out = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(null, 0)
    os.dup2(out, 1)
    os.dup2(out, 2)
    os.close(null)
    os.close(out)


def _watch(request: dict[str, Any], prepared: Prepared | None, report: int) -> NoReturn:
    """Fork the node, record it, let it go, report it, wait for it and record its end."""
    try:
        _detach(str(request["log"]))
        ours, theirs = socket.socketpair()
        pid = os.fork()
        if pid == 0:
            ours.close()
            os.close(report)
            _node(request, prepared, theirs)
        theirs.close()
        ours.recv(1)  # READY, or nothing when the node died already
        me = os.getpid()
        doc = {
            "pid": pid,
            "started": _start_ticks(pid),
            "watcher": me,
            "watcher_started": _start_ticks(me),
            "argv": request["argv"],
            "log": request["log"],
            "tag": request.get("tag") or {},
            "exit": None,
        }
        try:
            _write_record(str(request["procs"]), doc)
        except OSError as exc:
            os.write(report, json.dumps({"error": f"cannot record the node: {exc}"}).encode())
            os.close(report)
            ours.close()  # the node sees no GO and exits without running
            os.waitpid(pid, 0)
            os._exit(1)
        ours.sendall(GO)
        ours.close()
        os.write(report, json.dumps({"pid": pid, "started": doc["started"]}).encode())
        os.close(report)
        _, status = os.waitpid(pid, 0)
        doc["exit"] = _ending(status, doc["log"])
        _write_record(str(request["procs"]), doc)
        what = doc["exit"]["signal"] and f"killed by {doc['exit']['signal']}"
        what = what or f"exit code {doc['exit']['code']}"
        with open(doc["log"], "a") as f:
            f.write(f"--- rt_cluster: node process {pid} ended at {time.ctime()}: {what}\n")
    except BaseException:
        traceback.print_exc()
        os._exit(1)
    os._exit(0)


# ---- the zygote -----------------------------------------------------------------------------


def _request(line: str) -> dict[str, Any]:
    request = json.loads(line)
    if (
        not isinstance(request, dict)
        or not isinstance(request.get("argv"), list)
        or not isinstance(request.get("log"), str)
        or not isinstance(request.get("procs"), str)
    ):
        raise ValueError('expected {"argv": [...], "log": path, "procs": dir, "tag": {...}}')
    return request


def _serve(line: str) -> dict[str, Any]:
    """Fork a watcher for one request; its report (after the node is recorded)."""
    try:
        from cluster.node.cli import prepare

        request = _request(line)
        prepared = prepare([str(a) for a in request["argv"]])  # rule 6
        r, w = os.pipe()
        sys.stdout.flush()
        gc.freeze()  # rule 6
        pid = os.fork()
        if pid == 0:
            os.close(r)
            _watch(request, prepared, w)
        os.close(w)
        with os.fdopen(r, "rb") as f:
            data = f.read()  # until the watcher has reported (or died)
        reply = json.loads(data) if data else {"error": "the watcher ended before it reported"}
        return reply if isinstance(reply, dict) else {"error": f"bad report {reply!r}"}
    except (ValueError, OSError) as exc:
        return {"error": str(exc)}


def main() -> int:
    gc.disable()  # rule 6
    _preload()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for line in sys.stdin:
        reply = _serve(line)
        try:
            print(json.dumps(reply), flush=True)
        except BrokenPipeError:  # the launcher is gone; the node is recorded all the same
            break
    return 0


if __name__ == "__main__":
    sys.exit(main())
