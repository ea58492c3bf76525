"""One wall-clock deadline for a whole fetch: when it passes, every socket of the fetch is shut down.

httpx's timeouts bound each connect and each read, so a server that sends its headers or body one byte
at a time is never cut. A timer holds a duplicate of every connection's socket (taken through httpcore's
documented `trace` request extension) and shuts them all down at the deadline, which wakes the blocked
read at once; the duplicate keeps the descriptor number from being reused by another socket meanwhile.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from typing import Any


class FetchDeadline:
    """A deadline shared by the connect, headers and body of every hop and retry of one fetch."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.expires = time.monotonic() + seconds
        self.expired = False
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True
        self._timer.start()

    def remaining(self) -> float:
        """Seconds left (0 once the deadline has passed)."""
        return max(self.expires - time.monotonic(), 0.0)

    def trace(self, event: str, info: dict[str, Any]) -> None:
        """httpcore trace callback: remember each new connection's socket."""
        if event != "connection.connect_tcp.complete":
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        held = sock.dup()
        with self._lock:
            self._sockets.append(held)
            expired = self.expired
        if expired:
            _cut(held)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            held = list(self._sockets)
        for sock in held:
            _cut(sock)

    def close(self) -> None:
        """Stop the timer and release the held sockets."""
        self._timer.cancel()
        with self._lock:
            held, self._sockets = self._sockets, []
        for sock in held:
            sock.close()


def _cut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):  # already closed by the peer or by httpx: nothing to wake
        sock.shutdown(socket.SHUT_RDWR)
