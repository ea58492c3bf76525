"""Calls that run in a forked child of a pre-warmed interpreter, under a memory and a time limit: the agent's side.

A `ForkServer` starts fork_server.py on its first call (through sessions.start_server, as the python tool's
session server starts) with the functions it may run, named "module:function". Each `call` hands it the bytes
to work on (in a memfd) and a socket; the server forks a child that sets RLIMIT_AS (its size plus the call's
memory), confines itself where asked and this machine can (Landlock with read-only system paths and nothing
writable, seccomp without network sockets, no capability: what launcher.confine applies to model code), runs
the function and answers in JSON. The agent waits at most the call's time, or what is left of the caller's
deadline (core/cancellation: a tool call's, the index's update budget), whichever comes first; past it the
child is killed, so an abandoned caller leaves nothing converting. Ctrl-C kills the child (tools/processes.py).
A function that ran out of memory, or a child that died, or one that was too slow, is a `CallEnded` saying
which; an exception the function raised comes back as `CallFailed` with its class's name and message.
"""

from __future__ import annotations

import contextlib
import json
import marshal
import math
import os
import select
import signal
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from core import cancellation
from core.errors import StopRequested
from tools.sandbox import landlock, landlock_rules, seccomp, seccomp_problem
from tools.sandbox.sessions import ProcessGroup, ServerLink, start_server

FORK_SERVER = str(Path(__file__).with_name("fork_server.py"))
ROOT = str(Path(__file__).resolve().parents[2])  # the folder that holds the project's packages
MAX_ANSWER = 256 << 20  # bytes of an answer (fork_server.py refuses more: {"limit": "text"})
_TICK = 0.25  # seconds between looks at the stop flag while a child works
START_WAIT = 120.0  # seconds a child may take to start (the server warms a format up first, once)


@dataclass(frozen=True)
class ChildLimits:
    """What one call may use: memory on top of the interpreter's own (MB), wall-clock seconds, and whether the
    child confines itself (Landlock, seccomp, no capability) where this machine can."""

    memory_mb: int
    seconds: float
    confine: bool = True


class CallEnded(Exception):  # noqa: N818 - how a call ended, not a bug
    """The child gave no answer: `why` is "memory" (it met its memory limit), "time" (its own limit), "deadline"
    (the caller's deadline came first), "text" (its answer was too large), "sandbox" (it could not confine
    itself), "crashed" (it died: `detail` says how) or "unavailable" (the fork server could not start)."""

    def __init__(self, why: str, detail: str = "") -> None:
        super().__init__(why + (f": {detail}" if detail else ""))
        self.why = why
        self.detail = detail


class CallFailed(Exception):  # noqa: N818 - the function's own exception, carried over
    """The function raised in the child: the exception's class name, message and string attributes."""

    def __init__(self, kind: str, message: str, fields: dict[str, str]) -> None:
        super().__init__(message)
        self.kind = kind
        self.fields = fields


def available() -> bool:
    """Whether calls can run in forked children here (POSIX); elsewhere the caller runs them in-process."""
    return hasattr(os, "fork") and hasattr(socket, "AF_UNIX") and sys.platform != "win32"


def confinement() -> dict[str, Any]:
    """The rules a confined child applies (launcher.confine's): Landlock reading only system and interpreter
    paths and writing nothing, seccomp without network sockets; each where this machine has it."""
    rules: dict[str, Any] = {}
    if sys.platform != "linux":
        return rules
    if landlock.abi_version() >= 1:
        rules["landlock"] = landlock_rules([], network=False)
    if not seccomp_problem():
        rules["seccomp"] = seccomp.program(network=False)
    return rules


class ForkServer(ServerLink):
    """One fork server (started on first use, again if it died) and the calls it may run."""

    def __init__(self, functions: dict[str, str], warm: str | None = None) -> None:
        """`functions`: name -> "module:function", each called as function(data: bytes, **args) in the child
        and returning what JSON holds; `warm`: "module:function" the server calls with a kind before that
        kind's first child."""
        super().__init__()
        self.functions, self.warm = functions, warm

    def call(self, name: str, data: bytes, limits: ChildLimits, args: dict[str, Any] | None = None,
             kind: str = "", stoppable: bool = True) -> Any:
        """function(data, **args) in a child under `limits`; CallEnded, CallFailed, or StopRequested when the run
        is stopping (unless not `stoppable`: a short call the stop lets finish, bounded by its limits). `kind` is
        what the server warms itself with first (a format: "pdf", "docx")."""
        left = cancellation.remaining()
        if left is not None and left <= 0:
            raise CallEnded("deadline")
        request = {"call": name, "args": args or {}, "memory": limits.memory_mb << 20, "warm": kind,
                   "cpu": math.ceil(limits.seconds) + 1, "confine": limits.confine}
        sock = self._send(marshal.dumps(request), data)
        caller = None if left is None else time.monotonic() + left
        return _Call(sock, float(limits.seconds), caller, stoppable).wait()

    def _send(self, request: bytes, data: bytes) -> socket.socket:
        """The call's socket, once the server has the request with its two descriptors."""
        data_fd = _data_file(data)
        try:
            return self.connect(request, [data_fd])
        finally:
            os.close(data_fd)

    def _start(self) -> socket.socket:
        try:
            return start_server(FORK_SERVER, {"root": ROOT, "functions": self.functions, "warm": self.warm,
                                              "rules": confinement()})
        except OSError as exc:  # this interpreter cannot be started again (a path this user may not reach)
            raise CallEnded("unavailable", f"{type(exc).__name__}: {exc.strerror or exc}") from exc


def _data_file(data: bytes) -> int:
    """A descriptor of an unnamed file holding data (a memfd; a temporary file where there is none)."""
    try:
        fd = os.memfd_create("call-data", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        with tempfile.TemporaryFile() as fh:
            fd = os.dup(fh.fileno())
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    return fd


class _Call:
    """One call's socket: the child's pid, then its answer (or how it ended)."""

    def __init__(self, sock: socket.socket, seconds: float, caller: float | None, stoppable: bool = True) -> None:
        """`seconds`: the child's time, counted from its start (not the server's warm-up before it); `caller`:
        when the caller's deadline comes (time.monotonic()), if it has one; `stoppable`: the run's stop ends it."""
        self.sock, self.seconds, self.caller, self.stoppable = sock, seconds, caller, stoppable
        # Until the child says it started: the server may be warming the format up first.
        self.deadline = time.monotonic() + max(seconds, START_WAIT)
        self.poll = select.poll()  # (select.select cannot wait on a descriptor numbered past 1023)
        self.poll.register(sock, select.POLLIN)
        self.buffer = bytearray()
        self.group: ProcessGroup | None = None  # Ctrl-C kills it

    def wait(self) -> Any:
        """The answer's value; CallEnded / CallFailed / StopRequested as the call ended."""
        try:
            return _value(self._answer())
        finally:
            if self.group is not None:
                self.group.release()
            self.sock.close()

    def _answer(self) -> dict[str, Any]:
        while True:
            message = self._next()
            if message is not None:
                if "pid" in message and self.group is None:
                    self.group = ProcessGroup(int(message["pid"]))
                    self.deadline = time.monotonic() + self.seconds
                    continue
                if "exit" in message:
                    cancellation.check_stop()
                    raise CallEnded("crashed", _how(message["exit"]))
                return message
            if self.stoppable and cancellation.stopping():
                self._kill()
                raise StopRequested("the batch is stopping")
            now = time.monotonic()
            if self.caller is not None and self.caller <= min(now, self.deadline):
                self._kill()
                raise CallEnded("deadline")
            if self.deadline <= now:
                self._kill()
                raise CallEnded("time" if self.group is not None else "crashed", "" if self.group is not None
                                else f"the converter did not start within {max(self.seconds, START_WAIT):g} s")
            left = min(self.deadline, self.caller if self.caller is not None else self.deadline) - now
            if self.poll.poll(min(left, _TICK) * 1000):
                chunk = self.sock.recv(1 << 20)
                if not chunk:
                    cancellation.check_stop()
                    raise CallEnded("crashed", "the server ended")
                self.buffer += chunk

    def _next(self) -> dict[str, Any] | None:
        """The next whole message in the buffer, if one has come."""
        if len(self.buffer) < 4:
            return None
        size = int.from_bytes(self.buffer[:4], "big")
        if size > MAX_ANSWER + 4096:
            self._kill()
            raise CallEnded("text")
        if len(self.buffer) < 4 + size:
            return None
        body = bytes(self.buffer[4:4 + size])
        del self.buffer[:4 + size]
        message = json.loads(body)
        if not isinstance(message, dict):
            raise CallEnded("crashed", "an answer that is not one")
        return message

    def _kill(self) -> None:
        if self.group is None:
            return
        with contextlib.suppress(OSError):
            if self.group.pidfd is not None:
                signal.pidfd_send_signal(self.group.pidfd, signal.SIGKILL)
            else:
                os.kill(self.group.pid, signal.SIGKILL)


def _value(message: dict[str, Any]) -> Any:
    if "ok" in message:
        return message["ok"]
    if "limit" in message:
        raise CallEnded(str(message["limit"]))
    if message.get("error") == "sandbox":
        raise CallEnded("sandbox", str(message.get("message", "")))
    fields = message.get("fields")
    raise CallFailed(str(message.get("error", "Exception")), str(message.get("message", "")),
                     fields if isinstance(fields, dict) else {})


def _how(status: Any) -> str:
    """How a child ended, in words: 'killed by SIGSEGV', 'exit status 1'."""
    if isinstance(status, dict) and isinstance(status.get("signal"), int):
        try:
            return f"killed by {signal.Signals(status['signal']).name}"
        except ValueError:
            return f"killed by signal {status['signal']}"
    code = status.get("code") if isinstance(status, dict) else None
    return f"exit status {code}"
