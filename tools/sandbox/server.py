"""The session server: one pre-started interpreter per agent process that forks a Python session per task.

Started by the agent (sessions.py) as `python -I -B -u -X utf8 server.py CONFIG` on first use, from a
thread that lives as long as it does (PR_SET_PDEATHSIG follows the thread that started a process). It
imports the sessions' machinery and common standard modules once, so a session starts with a fork instead
of an interpreter. Each request on its socket carries a new socket for one session and how to confine it;
a forked child (a new process group) says its pid on that socket, then becomes the session's supervisor
(repl.supervise) or, under bubblewrap, execs bwrap with repl.py. The server keeps nothing of a session:
its socket is closed here right after the fork. It is a subreaper that kills any orphan a dead session
left, and when the agent goes (its socket closes, SIGTERM, or PR_SET_PDEATHSIG) it ends every session.
"""

from __future__ import annotations

import _signal
import _socket
import gc
import marshal
import os
import select
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import landlock  # noqa: E402,F401  (imported here once: sessions confine themselves without reading files)
import launcher  # noqa: E402
import repl  # noqa: E402
import wire  # noqa: E402

# Imported once here, so that a session's first `import` of them costs nothing (model code uses them often).
COMMON_MODULES = ("base64", "bisect", "collections", "copy", "csv", "datetime", "decimal", "functools", "glob",
                  "heapq", "itertools", "math", "operator", "random", "re", "string", "struct", "textwrap",
                  "typing", "unicodedata", "urllib.parse")

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_IDLE = 500  # milliseconds between looks for orphans while no request comes


def main() -> int:
    """Serve session requests until the agent's socket closes."""
    cfg = marshal.loads(bytes.fromhex(sys.argv[1]))
    for name in COMMON_MODULES:
        __import__(name)
    gc.freeze()  # what is here now is never scanned by a session's collector: its pages stay shared
    ctrl = _socket.socket(fileno=cfg["fd"])
    _signal.signal(_signal.SIGTERM, _stop)
    launcher.prctl(launcher.PR_SET_PDEATHSIG, _signal.SIGTERM)
    if os.getppid() != cfg["parent"]:
        return launcher.SANDBOX_FAILED  # the agent died before PDEATHSIG was armed
    launcher.become_supervisor()
    sessions: set[int] = set()
    poller = select.poll()
    poller.register(ctrl, select.POLLIN)
    try:
        while True:
            _tidy(sessions)
            if not poller.poll(_IDLE):
                continue
            msg, fds = wire.recv_message(ctrl, 1)
            if not msg:
                return 0
            for fd in fds:
                sessions.add(_spawn(ctrl, marshal.loads(msg), fd))
    except launcher.Stop:
        return 0
    finally:
        _signal.signal(_signal.SIGTERM, _signal.SIG_IGN)
        _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
        launcher.sweep()


def _stop(signum: int, frame: Any) -> None:
    raise launcher.Stop


def _tidy(sessions: set[int]) -> None:
    """Reap ended sessions; kill any other child (an orphan a dead session left behind)."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            break
        if not pid:
            break
        sessions.discard(pid)
    for pid in launcher.children(os.getpid()):
        if pid not in sessions:
            launcher.kill(pid, _signal.SIGKILL)


def _spawn(ctrl: _socket.socket, cfg: dict[str, Any], fd: int) -> int:
    """Fork the session's first process; it owns fd, we close it."""
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ctrl.detach())
            _session(cfg, fd)
        finally:
            os._exit(launcher.SANDBOX_FAILED)
    os.close(fd)
    return pid


def _session(cfg: dict[str, Any], fd: int) -> None:
    """In the child: a process group of its own, nothing of the server's, then the session."""
    parent = os.getppid()
    launcher.prctl(launcher.PR_SET_PDEATHSIG, _signal.SIGTERM)
    if os.getppid() != parent:
        return
    os.setsid()
    os.closerange(3, fd)
    os.closerange(fd + 1, 1 << 20)
    sock = _socket.socket(fileno=fd)
    wire.send_message(sock, marshal.dumps({"pid": os.getpid()}))
    if cfg.get("exec"):
        launcher.raise_priority()  # (inside bubblewrap the supervisor could not: it inherits it)
        os.set_inheritable(fd, True)
        argv = [*cfg["exec"], marshal.dumps({**cfg, "exec": None, "fd": fd}).hex()]
        os.execv(argv[0], argv)
    repl.supervise(cfg, sock)


if __name__ == "__main__":
    sys.exit(main())
