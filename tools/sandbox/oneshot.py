"""Running confined code and watching it: the child's environment, output capture, deadlines, clean-up.

run_limited() runs one command (the launcher and what it confines) in its own process group and kills the
group when it ends, times out or overfills the workspace: the shell tool's whole life, and the pattern
the python tool's sessions (sessions.py) follow with the same Capture, pump() and pump_until().
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from core.text import truncate_middle
from tools import processes

_CHUNK = 65_536
# Variables of the parent's environment that may reach the child; everything else (API keys!) is dropped.
_PASS_THROUGH = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"})
_STANDARD_PATH = ("/usr/local/bin", "/opt/homebrew/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
_POLL = 0.5  # seconds between workspace budget checks while code runs


@dataclass
class RunResult:
    """How a run ended: captured (already capped) output, the exit code, whether it timed out."""

    stdout: str
    stderr: str
    returncode: int
    timed_out: bool


class Capture:
    """Keeps the first and last bytes of a stream (bounded memory) and counts the bytes dropped between."""

    def __init__(self, max_chars: int) -> None:
        # Up to 4 bytes per UTF-8 character: once bytes are dropped, what is kept still decodes to more
        # than max_chars characters, so truncate_middle always cuts and shows its marker.
        self.window = 4 * max_chars
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0
        self.dropped_lines = 0

    def feed(self, data: bytes) -> None:
        """Take the next chunk of the stream."""
        room = self.window - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        excess = len(self.tail) - self.window
        if excess > 0:
            self.dropped += excess
            self.dropped_lines += self.tail.count(b"\n", 0, excess)
            del self.tail[:excess]

    def text(self, max_chars: int) -> str:
        """The stream as text, cut in the middle to max_chars with a marker saying what was cut."""
        if not self.dropped:
            return truncate_middle(bytes(self.head + self.tail).decode("utf-8", "replace"), max_chars)
        # A character split at either edge decodes to U+FFFD, but those edges fall inside the cut.
        joined = self.head.decode("utf-8", "replace") + self.tail.decode("utf-8", "replace")
        note = f"plus {self.dropped:,} more bytes ({self.dropped_lines:,} lines) that were not kept"
        return truncate_middle(joined, max_chars, note)


def base_environment(inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """The allow-listed part of a child's environment: PATH, locale, certificates, one-thread BLAS."""
    bin_dirs = [os.path.dirname(sys.executable), *(d for d in _STANDARD_PATH if os.path.isdir(d))]
    env = {"PATH": os.pathsep.join(dict.fromkeys(bin_dirs)), "LANG": "C.UTF-8"}
    for key, value in (inherited or {}).items():
        if key in _PASS_THROUGH or key.startswith("LC_"):
            env[key] = value
    env.update({
        "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1",
        # Unbuffered, so output printed before a timeout or crash is not lost.
        "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
        # One BLAS thread: thread pools reserve address space (RLIMIT_AS) and burn CPU time (RLIMIT_CPU).
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
    })
    return env


def child_environment(workspace: Path, inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's whole environment: an allowlist of inherited variables plus workspace-local dirs."""
    root = str(workspace)
    tmp = os.path.join(root, ".tmp")
    return {**base_environment(inherited), "HOME": os.path.join(root, ".home"), "TMPDIR": tmp, "TMP": tmp,
            "TEMP": tmp}


def nproc_limit(room: int = 256) -> int:
    """RLIMIT_NPROC for the child: the user's current thread count plus room for more (0 for root, whom
    the limit does not bind). The count is per user, so a fixed number could forbid any fork; a python
    session, which lives while other tasks' sessions start, asks for more room."""
    if os.geteuid() == 0 or not os.path.isdir("/proc"):
        return 0
    uid = os.geteuid()
    count = 0  # the limit counts threads, so a process counts as many as it has
    for name in os.listdir("/proc"):
        if name.isdigit():
            with contextlib.suppress(OSError, IndexError, ValueError):
                if os.stat(f"/proc/{name}").st_uid == uid:
                    with open(f"/proc/{name}/stat", "rb") as fh:
                        count += int(fh.read().rsplit(b")", 1)[1].split()[17])
    return count + room


def run_limited(argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float, *,
                max_chars: int = 20_000, drain_grace: float = 1.0,
                over_budget: Callable[[], bool] | None = None) -> tuple[Capture, Capture, int, bool]:
    """Run argv in its own process group; stop it on timeout or when over_budget() turns true, then
    kill the whole group. With the launcher as leader, SIGTERM first lets it sweep every descendant."""
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
    processes.register(proc)
    out, err = Capture(max_chars), Capture(max_chars)
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    pidfd = pidfd_of(proc.pid)
    if pidfd is not None:  # readable when the child exits: no polling delay
        sel.register(pidfd, selectors.EVENT_READ, None)
    timed_out = False
    try:
        timed_out = pump_until(sel, lambda: _exited(proc.pid), time.monotonic() + timeout, over_budget,
                               tick=None if pidfd is not None else 0.05)
        if timed_out:
            _terminate(proc.pid, min(drain_grace, 1.0))
        # The leader is alive or an unreaped zombie, so its group id cannot have been reused yet.
        kill_group(proc.pid)
        if pidfd is not None:
            sel.unregister(pidfd)
        drain(sel, drain_grace)
    finally:
        kill_group(proc.pid)  # again, for an exception (e.g. Ctrl-C) that skipped the kill above
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
        returncode = proc.wait()
        processes.unregister(proc)
    return out, err, returncode, timed_out


def pump_until(sel: selectors.BaseSelector, finished: Callable[[], bool], deadline: float,
               over_budget: Callable[[], bool] | None = None, tick: float | None = None) -> bool:
    """Pump output until finished() (False), or the deadline passes or over_budget() turns true (True)."""
    next_check = time.monotonic() + _POLL
    while not finished():
        now = time.monotonic()
        if now >= deadline:
            return True
        if over_budget is not None and now >= next_check:
            if over_budget():
                return True
            # A huge workspace makes each walk slow: never spend more than a tenth of the time walking.
            next_check = now + max(_POLL, 10 * (time.monotonic() - now))
        wait = min(deadline, next_check if over_budget else deadline) - now
        pump(sel, wait if tick is None else min(wait, tick))
    return False


def drain(sel: selectors.BaseSelector, grace: float) -> None:
    """Read the captured streams to their end: killed processes close them at once; one that escaped
    may hold them forever, so never longer than grace."""
    grace_end = time.monotonic() + grace
    while sel.get_map() and (left := grace_end - time.monotonic()) > 0:
        pump(sel, left)


def pump(sel: selectors.BaseSelector, timeout: float) -> None:
    """Wait up to timeout for the registered files: a Capture is fed (and dropped at its end), a callable
    is called with the ready key, None only wakes the caller."""
    for key, _ in sel.select(timeout):
        if key.data is None:
            continue
        if callable(key.data):
            key.data(key)
            continue
        chunk = os.read(key.fd, _CHUNK)
        if chunk:
            key.data.feed(chunk)
        else:
            sel.unregister(key.fileobj)


def pidfd_of(pid: int) -> int | None:
    """A pidfd for pid (readable once it exits), or None where the kernel has none."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _terminate(pid: int, grace: float) -> None:
    """SIGTERM the launcher (it kills and reaps everything under it) and give it a moment to do so."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while not _exited(pid) and time.monotonic() < end:
        time.sleep(0.005)


def _exited(pid: int) -> bool:
    # WNOWAIT leaves the zombie in place: the process group stays addressable for the final kill.
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def kill_group(pgid: int) -> None:
    """SIGKILL a process group, if it still exists."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
