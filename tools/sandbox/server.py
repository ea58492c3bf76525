"""The session server: one pre-started interpreter per agent process that forks a Python session per task.

Started by the agent (sessions.py) as `python -I -B -u -X utf8 server.py CONFIG` on first use, from a
thread that lives as long as it does (PR_SET_PDEATHSIG follows the thread that started a process). It
imports the sessions' machinery and common standard modules once, so a session starts with a fork instead
of an interpreter; when idle it forks one spare session ahead (a supervisor and an interpreter waiting,
unconfined: they have run nothing yet), so a task's first call does not wait for the forks. Each request on
its socket carries a new socket for one session and how to confine it: the spare gets it, or a forked
child (a new process group) says its pid on that socket, then becomes the session's supervisor
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
import mounts  # noqa: E402,F401
import privileges  # noqa: E402,F401
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
    return launcher.serve_until_stopped(cfg["parent"], _Server(ctrl).serve)


class _Server:
    """The sessions forked so far (their first processes) and the spare, if one waits."""

    def __init__(self, ctrl: _socket.socket) -> None:
        self.ctrl = ctrl
        self.sessions: set[int] = set()
        self.spare: tuple[int, _socket.socket] | None = None
        self.poller = select.poll()
        self.poller.register(ctrl, select.POLLIN)

    def serve(self) -> None:
        """Until the agent's socket closes: answer requests; when idle, keep a spare ready."""
        while True:
            _tidy(self.sessions)
            if self.spare is not None and self.spare[0] not in self.sessions:  # it died: make another
                self.spare[1].close()
                self.spare = None
            if not self.poller.poll(_IDLE if self.spare is not None else 0):
                if self.spare is None:  # idle: make the next task's session ahead, off its first call's path
                    self.spare = _fork_spare(self.ctrl)
                    self.sessions.add(self.spare[0])
                continue
            msg, fds = wire.recv_message(self.ctrl, 1)
            if not msg:
                return
            for fd in fds:
                self.start(marshal.loads(msg), msg, fd)
                os.close(fd)

    def start(self, cfg: dict[str, Any], msg: bytes, fd: int) -> None:
        """A session for the task: the spare if there is one (not under bubblewrap), else a fork."""
        if self.spare is not None and not cfg.get("exec") and _hand_over(self.spare[1], msg, fd):
            self.spare = None
        else:
            self.sessions.add(_spawn(self.ctrl, cfg, fd))


def _hand_over(spare: _socket.socket, msg: bytes, fd: int) -> bool:
    """Give a task to the spare session; False when the spare is gone (then a session is forked for it)."""
    try:
        wire.send_message(spare, msg, [fd])
    except OSError:
        return False
    finally:
        spare.close()
    return True


def _tidy(sessions: set[int]) -> None:
    """Reap ended sessions; kill any other child (an orphan a dead session left behind)."""
    launcher.tidy(sessions, lambda pid, status: sessions.discard(pid))


def _spawn(ctrl: _socket.socket, cfg: dict[str, Any], fd: int) -> int:
    """Fork the session's first process for this task (it keeps fd; the caller closes its own)."""
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ctrl.detach())
            _session(cfg, fd)
        finally:
            os._exit(launcher.SANDBOX_FAILED)
    return pid


def _fork_spare(ctrl: _socket.socket) -> tuple[int, _socket.socket]:
    """Fork a session ahead of its task: its pid, and the socket its task will be handed on."""
    mine, theirs = _socket.socketpair(_socket.AF_UNIX, _socket.SOCK_STREAM)
    pid = os.fork()
    if pid == 0:
        try:
            os.close(ctrl.detach())
            mine.close()
            if launcher.own_group([theirs.fileno()], _signal.SIGTERM):
                repl.supervise_spare(theirs)
        finally:
            os._exit(launcher.SANDBOX_FAILED)
    theirs.close()
    return pid, mine


def _session(cfg: dict[str, Any], fd: int) -> None:
    """In the child: a process group of its own, nothing of the server's, then the session."""
    if not launcher.own_group([fd], _signal.SIGTERM):
        return
    sock = _socket.socket(fileno=fd)
    wire.send_message(sock, marshal.dumps({"pid": os.getpid()}))
    if cfg.get("exec"):
        launcher.join_pids(cfg)  # bubblewrap and all in it count (inside, /sys is out of sight)
        launcher.raise_priority()  # (inside bubblewrap the supervisor could not: it inherits it)
        os.set_inheritable(fd, True)
        argv = [*cfg["exec"], marshal.dumps({**cfg, "exec": None, "fd": fd, "pids": None}).hex()]
        os.execv(argv[0], argv)
    repl.supervise(cfg, sock)


if __name__ == "__main__":
    sys.exit(main())
