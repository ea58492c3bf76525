"""A live probe of the python tool's sandbox: can a child read a planted file or reach a loopback port?"""

from __future__ import annotations

import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path

from config import Settings
from tools.python_exec import PythonTool

_CODE = """\
import socket
try:
    open({path!r}).read()
    print('file: READ')
except OSError as exc:
    print('file: refused', type(exc).__name__)
try:
    socket.create_connection(('127.0.0.1', {port}), timeout=2).close()
    print('socket: CONNECTED')
except OSError as exc:
    print('socket: refused', type(exc).__name__)
"""


@dataclass(frozen=True)
class ProbeResult:
    """What the child could do and the sandbox that was active."""

    backend: str
    description: str
    read_outside: bool
    connected: bool
    output: str


def run_probe(settings: Settings, scratch: Path) -> ProbeResult:
    """Plant a file beside the workspace and listen on loopback, then let a python tool run try both."""
    with tempfile.TemporaryDirectory(dir=scratch, prefix="probe-") as tmp:
        planted = Path(tmp) / "planted-secret.txt"
        planted.write_text("PROBE-BAIT\n")
        with socket.create_server(("127.0.0.1", 0)) as server:
            server.settimeout(0)
            tool = PythonTool(Path(tmp) / "ws", settings)
            try:
                out = tool.run(code=_CODE.format(path=str(planted), port=server.getsockname()[1]))
            finally:
                tool.close()
            connected = _accepted(server) or "socket: CONNECTED" in out
        return ProbeResult(tool.sandbox.backend, tool.sandbox.describe(), "file: READ" in out, connected, out)


def _accepted(server: socket.socket) -> bool:
    try:
        conn, _ = server.accept()
    except (BlockingIOError, OSError):
        return False
    conn.close()
    return True


def summary(result: ProbeResult) -> tuple[bool, str]:
    """(contained, one line): what the probe child managed and the active sandbox."""
    did = [w for w, yes in (("read a file outside its workspace", result.read_outside),
                            ("connected to a loopback port", result.connected)) if yes]
    verdict = ("probe child " + " and ".join(did)) if did else "probe child could not read outside nor connect"
    return not did, f"{verdict}; sandbox: {result.description}"

