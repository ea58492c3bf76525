"""Messages between the agent, the session server and a session: length-prefixed, on UNIX stream sockets.

Stream sockets exist everywhere (SOCK_SEQPACKET does not on macOS) and tell a closed peer at once. A message
is its length (4 bytes, big-endian) and its bytes; file descriptors travel with the length. Used by
sessions.py in the agent and, as a plain module beside them, by server.py and repl.py: only C modules
(_socket, array), so that every session forked from the server copies as little memory as can be; the
POSIX-only names are looked up when used, so the agent still imports this module on Windows.
"""

from __future__ import annotations

import _socket
import array
import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from _socket import socket

MAX_MESSAGE = 1 << 20
_INT = array.array("i").itemsize


def send_message(sock: socket, data: bytes, fds: list[int] | None = None) -> None:
    """Send one message, with fds if given."""
    payload = len(data).to_bytes(4, "big") + data
    extra = [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    sent = sock.sendmsg([payload], extra)
    while sent < len(payload):
        sent += sock.send(payload[sent:])


def recv_message(sock: socket, max_fds: int = 0, limit: int = MAX_MESSAGE) -> tuple[bytes, list[int]]:
    """The next message and the fds that came with it; (b"", []) when the peer closed (or sent nonsense)."""
    head, fds = b"", []
    while len(head) < 4:
        chunk, extra, _, _ = sock.recvmsg(4 - len(head), _socket.CMSG_SPACE(max_fds * _INT) if max_fds else 0)
        for level, kind, raw in extra:
            if level == _socket.SOL_SOCKET and kind == _socket.SCM_RIGHTS:
                got = array.array("i")
                got.frombytes(raw[: len(raw) - len(raw) % _INT])
                fds += list(got)
        if not chunk:
            return _closed(fds)
        head += chunk
    size = int.from_bytes(head, "big")
    if size == 0 or size > limit:
        return _closed(fds)
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return _closed(fds)
        data += chunk
    return data, fds


def _closed(fds: list[int]) -> tuple[bytes, list[int]]:
    for fd in fds:
        os.close(fd)
    return b"", []
