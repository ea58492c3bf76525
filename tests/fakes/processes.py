"""Finding the processes a test started by a token in their command line, and waiting for them to be gone."""

from __future__ import annotations

import os
import subprocess
import sys
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


def cannot_run_as_nobody(prefix: list[str], cwd: Path) -> str:
    """Why `nobody` cannot run the agent here through `prefix` (setpriv ...), '' when it can: the interpreter, the
    checkout and the packages of the virtual environment must be readable by other users, and the test's folder
    `cwd` reachable (a folder only root may enter above any of them, as mktemp -d's 0700 or pytest's tmp_path
    under /tmp/pytest-of-root, stops it). The interpreter it starts must start another (the agent's sandbox and
    document converter servers do): a venv whose python links into a folder only root may enter (/root/.pyenv)
    runs through setpriv, not from there."""
    root = Path(__file__).resolve().parents[2]
    code = ("import os, subprocess, sys, config, main, run.execute, openai; os.listdir('.'); "  # what a run imports
            "subprocess.run([sys.executable, '-c', ''], check=True)")
    proc = subprocess.run([*prefix, sys.executable, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=120, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                       "PYTHONPATH": str(root)})
    if proc.returncode == 0:
        return ""
    last = (proc.stderr.strip().splitlines() or ["no message"])[-1]
    return (f"nobody cannot run {sys.executable} on {root} in {cwd} ({last}): make the virtual environment, the "
            "checkout and the temporary folder readable by other users to run this test")
