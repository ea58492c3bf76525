"""The python tool's sessions: one confined interpreter per task that keeps its variables between calls.

SessionServer starts server.py once per agent process, on first use, and asks it for one session per task.
PythonSession is the agent's handle on one: each call sends the saved script's path with a fresh pair of
pipes for stdout and stderr, captured as one-shot runs are (oneshot.py), and waits for the answer under the
call's deadline and the workspace budget. A timeout, a spent budget, close() (the task ended) or a second
call while one still runs ends the session: SIGKILL to its process group, its socket closed; Ctrl-C does
the same through tools/processes.py. The server and the sessions die with the agent (PR_SET_PDEATHSIG).
"""

from __future__ import annotations

import contextlib
import marshal
import os
import select
import selectors
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tools import processes
from tools.sandbox import SERVER, SESSION_FLAGS, pids
from tools.sandbox.oneshot import Capture, base_environment, drain, kill_group, pidfd_of, pump_until
from tools.sandbox.wire import recv_message, send_message


@dataclass
class CallResult:
    """How one call went: its (capped) output, its exit status, and whether it ended the session and why."""

    stdout: Capture
    stderr: Capture
    returncode: int
    timed_out: bool = False
    ended: str | None = None  # "exit" (the interpreter died), "processes", "killed" (timed out), "gone"
    limit: str | None = None  # "memory" or "file_size": a limit the call hit (the tool ends the session)
    fresh: bool = False  # the call started the session
    lost: str | None = None  # the previous session had ended between calls (why, as `ended` says it)


class ServerLink:
    """The agent's socket to one server script of this folder (server.py, fork_server.py): the server is started
    on first use, and again if it died."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ctrl: socket.socket | None = None

    def _start(self) -> socket.socket:
        """Start the server (start_server): the agent's end of its socket."""
        raise NotImplementedError

    def connect(self, request: bytes, fds: list[int] | None = None) -> socket.socket:
        """A new socket whose other end the server gets with the request (and `fds` after it), starting the
        server first where none runs."""
        mine, theirs = socket.socketpair()
        try:
            with self._lock:
                for attempt in range(2):
                    if self._ctrl is None:
                        self._ctrl = self._start()
                    try:
                        send_message(self._ctrl, request, [theirs.fileno(), *(fds or [])])
                        return mine
                    except OSError:
                        self._ctrl.close()
                        self._ctrl = None  # the server died (killed by hand?): start another
                        if attempt:
                            raise
        except BaseException:
            mine.close()
            raise
        finally:
            theirs.close()
        raise AssertionError("unreachable")


class SessionServer(ServerLink):
    """The agent process's one session server (server.py)."""

    def _start(self) -> socket.socket:
        return start_server(SERVER, {})

    def open(self, request: dict[str, Any]) -> socket.socket:
        """A socket to a new session confined as request says (its first message is the session's pid)."""
        return self.connect(marshal.dumps(request))


def start_server(script: str, cfg: dict[str, Any]) -> socket.socket:
    """Start a server script of this folder (server.py, fork_server.py) as `python -I -B -u -X utf8 SCRIPT CONFIG`
    with the allow-listed environment, and the agent's end of its socket. CONFIG is cfg with the server's end of
    the socket ("fd") and our pid ("parent"). Started from a thread that waits for it, so PR_SET_PDEATHSIG
    fires only when we die."""
    mine, theirs = socket.socketpair()
    argv = [sys.executable, *SESSION_FLAGS, script,
            marshal.dumps({**cfg, "fd": theirs.fileno(), "parent": os.getpid()}).hex()]
    started = threading.Event()
    box: dict[str, Any] = {}

    def keep() -> None:
        try:
            box["proc"] = subprocess.Popen(
                argv, env=base_environment(), cwd="/", stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, pass_fds=[theirs.fileno()], start_new_session=True)
        except OSError as exc:
            box["error"] = exc
        finally:
            started.set()
        if "proc" in box:
            box["proc"].wait()

    threading.Thread(target=keep, name=f"sandbox-{os.path.basename(script)[:-3]}", daemon=True).start()
    started.wait()
    theirs.close()
    if "error" in box:
        mine.close()
        raise box["error"]
    return mine


_server = SessionServer()


class ProcessGroup:
    """A process group another process started (a session's, a forked call's), tracked by tools/processes.py
    from its leader's first word until release(): Ctrl-C kills it. `pidfd`: its leader's (readable once it
    ends), where the kernel has them."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None
        self.pidfd = pidfd_of(pid)
        processes.register(self)

    def release(self) -> None:
        """No longer tracked; its pidfd closed."""
        processes.unregister(self)
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None


class PythonSession:
    """One task's confined Python interpreter, started by the first call; thread-safe."""

    def __init__(self, request: dict[str, Any], server: SessionServer | None = None) -> None:
        self.request = request
        self.server = server or _server
        self._busy = threading.Lock()
        self._sock: socket.socket | None = None
        self._group: ProcessGroup | None = None  # Ctrl-C kills the session
        self._pids: str | None = None  # its pids cgroup (pids.py)

    @property
    def started(self) -> bool:
        """Whether a session is running (between calls or in one)."""
        return self._sock is not None

    def call(self, path: str, cpu_seconds: int, timeout: float, *, max_chars: int, drain_grace: float = 1.0,
             over_budget: Callable[[], bool] | None = None) -> CallResult:
        """Run the saved script at path in the session (starting one if there is none)."""
        if not self._busy.acquire(blocking=False):  # an abandoned call still runs: end it, start afresh
            self._kill()
            self._busy.acquire()
        try:
            lost = None
            if self._sock is not None and self._group is not None and not self._alive():
                lost = "gone"  # ended between calls (Ctrl-C, the server's end): start another
                self._release()
            fresh = self._sock is None
            if self._sock is None:
                self._pids = pids.group()  # the kernel's bound on its processes, root included, where there is one
                join = pids.join_file(self._pids) if self._pids else None  # what its processes write "0" to
                self._sock = self.server.open({**self.request, "pids": join})
            result = self._call(self._sock, path, cpu_seconds, timeout, max_chars, drain_grace, over_budget)
            result.fresh, result.lost = fresh, lost
            if result.ended:
                self._release()
            return result
        finally:
            self._busy.release()

    def _call(self, sock: socket.socket, path: str, cpu_seconds: int, timeout: float, max_chars: int,
              drain_grace: float, over_budget: Callable[[], bool] | None) -> CallResult:
        out, err = Capture(max_chars), Capture(max_chars)
        replies: list[dict[str, Any]] = []
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        sel = selectors.DefaultSelector()
        try:
            try:
                send_message(sock, marshal.dumps({"op": "run", "path": path, "cpu": cpu_seconds}), [out_w, err_w])
            except OSError:
                replies.append({"ended": -9, "why": "gone"})
            finally:
                os.close(out_w)
                os.close(err_w)
            sel.register(out_r, selectors.EVENT_READ, out)
            sel.register(err_r, selectors.EVENT_READ, err)
            sel.register(sock, selectors.EVENT_READ, lambda key: self._receive(key, sel, replies))
            timed_out = not replies and pump_until(sel, lambda: bool(replies), time.monotonic() + timeout,
                                                   over_budget)
            if timed_out:
                self._kill()
            with contextlib.suppress(KeyError):
                sel.unregister(sock)
            drain(sel, drain_grace)
        finally:
            sel.close()
            os.close(out_r)
            os.close(err_r)
        if timed_out:
            return CallResult(out, err, -9, timed_out=True, ended="killed")
        reply = replies[0]
        if "ended" in reply:
            return CallResult(out, err, int(reply["ended"]), ended=str(reply["why"]))
        return CallResult(out, err, int(reply["status"]), limit=reply.get("kind"))

    def _receive(self, key: selectors.SelectorKey, sel: selectors.BaseSelector,
                 replies: list[dict[str, Any]]) -> None:
        """One message of the session: its pid (first), the call's answer, or its end (the socket closed)."""
        try:
            data, _ = recv_message(key.fileobj)  # type: ignore[arg-type]
        except OSError:
            data = b""
        if not data:
            sel.unregister(key.fileobj)
            replies.append({"ended": -9, "why": "gone"})  # stopped from outside: Ctrl-C, the server's end
            return
        message = marshal.loads(data)
        if "pid" in message:
            self._group = ProcessGroup(int(message["pid"]))
        else:
            replies.append(message)

    def _alive(self) -> bool:
        """Whether the session's first process still runs (so its group id is still its own)."""
        if self._group is None:
            return False
        if self._group.pidfd is not None:
            return not select.select([self._group.pidfd], [], [], 0)[0]
        try:
            os.kill(self._group.pid, 0)
        except ProcessLookupError:
            return False
        return True

    def _kill(self) -> None:
        """Kill every process of the session at once; the supervisor sees its socket close as well."""
        if self._group is not None and self._alive():
            kill_group(self._group.pid)
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.shutdown(socket.SHUT_RDWR)

    def _release(self) -> None:
        """Forget an ended session: its socket, pidfd and registration."""
        self._kill()
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if self._group is not None:
            self._group.release()
            self._group = None
        pids.release(self._pids)
        self._pids = None

    def close(self) -> None:
        """End the session (the task ended): nothing of it keeps running; the next call starts a new one."""
        self._kill()  # at once, even while a call runs in another thread: that call then returns
        with self._busy:
            self._release()
