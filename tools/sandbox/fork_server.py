"""The fork server: one pre-warmed interpreter per agent process that runs each call in a forked, limited child.

Started by the agent (forks.py, through sessions.start_server) as `python -I -B -u -X utf8 fork_server.py
CONFIG` on first use. It imports the modules that hold its functions once (document converters: pypdf,
python-docx, lxml...), so a call costs a fork instead of an interpreter and its imports; before the first call
of a kind it warms that kind in itself (the agent names a warm-up function: a small document of the format
converted once), so that lazy imports and caches are paid once, not in every child. `gc.freeze()` keeps what
it holds out of the children's collections, so their pages stay shared.

Each request (marshal, from the agent: trusted) names a function and its arguments and carries two file
descriptors: the call's socket and the bytes to work on (a memfd). The child, a process group of its own that
dies with the server (PR_SET_PDEATHSIG), says its pid, sets RLIMIT_AS (its size at the fork plus the call's
memory), RLIMIT_CPU and no file size, confines itself as launcher.confine does (Landlock with read-only system
paths and nothing writable, seccomp without network, no capability) when the request asks, reads the bytes,
calls the function and answers in JSON: {"ok": value}, {"error": kind, ...}, or {"limit": "memory"} (a
MemoryError: RLIMIT_AS met). When the child ends, the server adds {"exit": status} on the same socket, so the
agent learns how a child died that could not answer (a signal). The agent kills a child past its time (its
pid). The server is a subreaper that kills any orphan, and when the agent goes (its socket closes, SIGTERM or
PR_SET_PDEATHSIG) it kills every child. Its stderr is /dev/null: library warnings never reach a terminal.
"""

from __future__ import annotations

import _signal
import _socket
import gc
import importlib
import json
import marshal
import os
import select
import sys

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
import landlock  # noqa: E402,F401  (imported now: confine() imports them after the fork, from this folder)
import launcher  # noqa: E402
import privileges  # noqa: E402,F401
import wire  # noqa: E402

sys.path.remove(_HERE)  # this folder's plain names (limits, paths, wire...) must not shadow a library's module

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

_IDLE = 500  # milliseconds between looks for orphans while nothing runs
_TICK = 20  # milliseconds between looks for ended children where the kernel has no pidfd
MAX_ANSWER = 256 << 20  # bytes of JSON an answer may hold; more is refused as {"limit": "text"}
_MEMORY = json.dumps({"limit": "memory"}).encode()


def main() -> int:
    """Serve call requests until the agent's socket closes."""
    cfg = marshal.loads(bytes.fromhex(sys.argv[1]))
    sys.path.insert(0, cfg["root"])
    functions = {name: _resolve(ref) for name, ref in cfg["functions"].items()}
    warm = _resolve(cfg["warm"]) if cfg.get("warm") else None
    _compact()
    ctrl = _socket.socket(fileno=cfg["fd"])
    return launcher.serve_until_stopped(cfg["parent"], _Server(ctrl, functions, warm, cfg.get("rules") or {}).serve)


def _compact() -> None:
    """Before the next fork: the warm-up's garbage collected and its freed memory given back (a fork copies the
    page tables of all the memory a process holds, and each child pays for what it touches), the rest frozen
    out of the children's collections so that their pages stay shared."""
    gc.collect()
    launcher.malloc_trim()
    gc.freeze()


def _resolve(ref: str) -> Callable[..., Any]:
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


class _Server:
    """The children running now (each with its call's socket and a pidfd) and the kinds already warmed."""

    def __init__(self, ctrl: _socket.socket, functions: dict[str, Callable[..., Any]],
                 warm: Callable[[str], None] | None, rules: dict[str, Any]) -> None:
        self.ctrl, self.functions, self.warm, self.rules = ctrl, functions, warm, rules
        self.children: dict[int, tuple[_socket.socket, int | None]] = {}
        self.warmed: set[str] = set()
        self.poller = select.poll()
        self.poller.register(ctrl, select.POLLIN)

    def serve(self) -> None:
        """Until the agent's socket closes: fork a child per request; tell each call how its child ended."""
        while True:
            timeout = _TICK if any(fd is None for _, fd in self.children.values()) else _IDLE
            ready = {fd for fd, _ in self.poller.poll(timeout)}
            if self.ctrl.fileno() in ready:
                msg, fds = wire.recv_message(self.ctrl, 2)
                if not msg:
                    return
                if len(fds) == 2:
                    self.start(marshal.loads(msg), fds[0], fds[1])
                else:
                    for fd in fds:
                        os.close(fd)
            self.reap()

    def start(self, request: dict[str, Any], sock_fd: int, data_fd: int) -> None:
        """Fork the child for one call (after warming its kind here, the first time); keep its socket."""
        kind = request.get("warm")
        if kind and self.warm is not None and kind not in self.warmed:
            self.warmed.add(kind)
            try:  # noqa: SIM105 (a warm-up that fails only costs the children its laziness)
                self.warm(kind)
            except Exception:  # noqa: BLE001
                pass
            _compact()
        pid = os.fork()
        if pid == 0:
            try:
                self.ctrl.close()
                _child(request, sock_fd, data_fd, self.functions, self.rules)
            finally:
                os._exit(launcher.SANDBOX_FAILED)
        os.close(data_fd)
        sock = _socket.socket(fileno=sock_fd)
        try:
            pidfd: int | None = os.pidfd_open(pid)
        except (AttributeError, OSError):
            pidfd = None
        if pidfd is not None:
            self.poller.register(pidfd, select.POLLIN)
        self.children[pid] = (sock, pidfd)

    def reap(self) -> None:
        """Reap ended children, telling each call how its child ended; kill any other child (an orphan)."""
        launcher.tidy(self.children, self._ended)

    def _ended(self, pid: int, status: int) -> None:
        if pid not in self.children:
            return
        sock, pidfd = self.children.pop(pid)
        if pidfd is not None:
            self.poller.unregister(pidfd)
            os.close(pidfd)
        how = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"code": os.waitstatus_to_exitcode(status)}
        body = json.dumps({"exit": how}).encode()
        try:  # noqa: SIM105 (the call may have gone: its answer came, or it gave up)
            sock.send(len(body).to_bytes(4, "big") + body, _socket.MSG_DONTWAIT | _socket.MSG_NOSIGNAL)
        except OSError:
            pass
        sock.close()


def _child(request: dict[str, Any], sock_fd: int, data_fd: int, functions: dict[str, Callable[..., Any]],
           rules: dict[str, Any]) -> None:
    """In the child: a process group of its own, nothing of the server's, its limits and confinement; then the
    call, its answer on the socket, and the end."""
    if not launcher.own_group([sock_fd, data_fd], _signal.SIGKILL):
        return
    launcher.default_signals()
    sock = _socket.socket(fileno=sock_fd)
    if not _send(sock, json.dumps({"pid": os.getpid()}).encode()):
        return  # the call was given up while the server warmed up: nobody waits for this one
    cfg: dict[str, Any] = {"limits": [_address_space() + request["memory"], request["cpu"], 1]}
    if request.get("confine"):
        cfg.update(rules)
    try:
        launcher.confine(cfg)  # limits and priority; with rules: Landlock, no capability, seccomp
    except Exception as exc:  # noqa: BLE001 (the agent says why the call could not run)
        _send(sock, json.dumps({"error": "sandbox", "message": f"{type(exc).__name__}: {exc}"}).encode())
        return
    _answer(sock, functions[request["call"]], data_fd, request.get("args") or {})


def _answer(sock: _socket.socket, function: Callable[..., Any], data_fd: int, args: dict[str, Any]) -> None:
    body = None
    try:
        body = json.dumps({"ok": function(_read_all(data_fd), **args)}).encode()
    except MemoryError:
        pass  # the exception (and the frames holding the document) is gone once out of this block
    except Exception as exc:  # noqa: BLE001 (its class and message go back to the agent)
        body = json.dumps(_error(exc)).encode()
    if body is None:
        _send(sock, _MEMORY)
    elif len(body) > MAX_ANSWER:
        _send(sock, json.dumps({"limit": "text", "size": len(body)}).encode())
    else:
        _send(sock, body)


def _error(exc: BaseException) -> dict[str, Any]:
    """What the agent needs to raise the same error: the class's name, its message, and its `fields` if any."""
    return {"error": type(exc).__name__, "message": str(exc)[:2000],
            "fields": {k: v for k, v in vars(exc).items() if isinstance(v, str)}}


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, min(size - offset, 1 << 24), offset)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
    os.close(fd)
    return b"".join(chunks)


def _address_space() -> int:
    """This process's virtual size in bytes now (what RLIMIT_AS counts): the call's memory comes on top."""
    try:
        with open("/proc/self/statm", "rb") as fh:
            return int(fh.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0


def _send(sock: _socket.socket, body: bytes) -> bool:
    """Send one message; False when the agent has given up on the call (its socket closed)."""
    try:
        sock.sendall(len(body).to_bytes(4, "big") + body)
    except OSError:
        return False
    return True


if __name__ == "__main__":
    sys.exit(main())
