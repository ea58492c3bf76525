"""bubblewrap: new namespaces (PID, network, mount, IPC, UTS, user), read-only binds, the workspace writable."""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Iterable


@functools.cache
def probe() -> str:
    """'' when bwrap is installed and can create its namespaces here, else why not."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap is not installed"
    return trial([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/", "true"],
                 "bwrap cannot create namespaces here")


def trial(argv: list[str], failure: str) -> str:
    """'' when argv runs and exits 0 (within 10 s), else `failure: <its last line of stderr>` (a probe of what
    this machine allows; the mount namespace's probe uses it too)."""
    try:
        done = subprocess.run(argv, capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{failure}: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return failure + (f": {reason[-1]}" if reason else "")
    return ""


def command(read_only: Iterable[str], workspace: str, *, network: bool, devices: Iterable[str] = (),
            drops_itself: bool = False) -> list[str]:
    """The bwrap prefix that runs a command with only these paths visible. drops_itself: the command is our
    launcher or session, given CAP_SETPCAP (in the new user namespace) only to lock the securebits and empty
    every capability set itself (privileges.drop_all) before any model code runs."""
    exe = shutil.which("bwrap") or "bwrap"
    argv = [exe, "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    if drops_itself:
        argv += ["--cap-add", "CAP_SETPCAP"]
    if network:
        argv.append("--share-net")
    argv += ["--dev", "/dev", "--proc", "/proc"]
    for path in read_only:
        if os.path.islink(path):
            argv += ["--symlink", os.readlink(path), path]
        else:
            argv += ["--ro-bind-try", path, path]
    for dev in devices:
        argv += ["--dev-bind-try", dev, dev]
    # The root and /dev are tmpfs that bwrap builds: read-only, so nothing lands in memory outside the
    # workspace (its byte budget would not see it).
    argv += ["--bind", workspace, workspace, "--remount-ro", "/dev", "--remount-ro", "/", "--chdir", workspace, "--"]
    return argv
