"""Messages between the agent, the session server and a session: length-prefixed, on UNIX stream sockets.

Stream sockets exist everywhere (SOCK_SEQPACKET does not on macOS) and tell a closed peer at once. A message
is its length (4 bytes, big-endian) and its bytes; file descriptors travel with the length. Used by
sessions.py in the agent and, as a plain module beside them, by server.py and repl.py.
"""

from __future__ import annotations

import os
import socket

MAX_MESSAGE = 1 << 20


def send_message(sock: socket.socket, data: bytes, fds: list[int] | None = None) -> None:
    """Send one message, with fds if given."""
    payload = len(data).to_bytes(4, "big") + data
    sent = socket.send_fds(sock, [payload], fds) if fds else sock.send(payload)
    if sent < len(payload):
        sock.sendall(payload[sent:])


def recv_message(sock: socket.socket, max_fds: int = 0, limit: int = MAX_MESSAGE) -> tuple[bytes, list[int]]:
    """The next message and the fds that came with it; (b"", []) when the peer closed (or sent nonsense)."""
    head, fds = b"", []
    while len(head) < 4:
        if max_fds:
            chunk, got, _, _ = socket.recv_fds(sock, 4 - len(head), max_fds)
            fds += got
        else:
            chunk = sock.recv(4 - len(head))
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
