"""Finding the processes a test started by a token in their command line, and waiting for them to be gone."""

from __future__ import annotations

import os
import time
from pathlib import Path


def alive_with(token: str) -> list[int]:
    """Live processes (not zombies, not this one) whose command line holds token."""
    found = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                cmd = Path(f"/proc/{name}/cmdline").read_bytes()
                state = Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if token.encode() in cmd and state not in ("Z", "X") and int(name) != os.getpid():
                found.append(int(name))
    return found


def gone(token: str, within: float = 5.0) -> bool:
    """Whether every process holding token has ended within the given seconds."""
    end = time.monotonic() + within
    while alive_with(token):
        if time.monotonic() > end:
            return False
        time.sleep(0.02)
    return True
