"""Ctrl-C and SIGTERM during a batch: the first stops it cleanly, the second exits at once.

First signal: the stop flag is set (queued tasks are skipped, running ones end at their next step
boundary and are not recorded), running tool processes are killed, and the CLI writes the report and
exits 128 + the signal number (130 for Ctrl-C, 143 for SIGTERM). Second signal: tool processes are killed
and the process exits at once, after any report write in progress has finished (writers hold write_lock)
and the report shows every saved record (on_exit).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

from tools import processes  # imported now: an import inside a signal handler could wait on the import lock

HANDLED = (signal.SIGINT, signal.SIGTERM)
WRITE_WAIT = 10.0  # longest a second signal waits for a report write in progress


def _say(text: str) -> None:
    # os.write, not print: a handler may interrupt a print on the same stream (reentrant-call error).
    with contextlib.suppress(OSError):
        os.write(sys.stderr.fileno(), (text + "\n").encode())


class Stopper:
    """Installs the handlers for a batch; `event` is the stop flag the runner and the agents watch."""

    def __init__(self, message: str = "stopping: no new tasks start; running tasks end at their next step "
                                      "(press Ctrl-C again to quit at once)") -> None:
        self.message = message  # what the first signal prints
        self.event = threading.Event()
        self.write_lock = threading.Lock()
        self.signum: int | None = None
        self.count = 0
        self.on_exit: Callable[[], None] | None = None  # brings the report up to date before a hard exit
        self.flush: Callable[[], None] | None = None  # sends the finished OpenTelemetry spans before a hard exit
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        """True once a stop signal arrived."""
        return self.signum is not None

    def by(self) -> str:
        """Who stopped the run, as a report says it: `the user (Ctrl-C)`; a SIGTERM comes from elsewhere (a
        shutdown, `kill`, a service manager or a container's stop), not from the user at the keyboard."""
        if self.signum in (None, signal.SIGINT):
            return "the user (Ctrl-C)"
        return f"a {signal.Signals(self.signum).name} signal (sent by the system or another program, not Ctrl-C)"

    @property
    def exit_code(self) -> int:
        """128 + the first signal's number (130 for SIGINT, 143 for SIGTERM)."""
        return 128 + (self.signum or signal.SIGINT)

    def __enter__(self) -> Stopper:
        if threading.current_thread() is threading.main_thread():
            for sig in HANDLED:
                self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous.clear()

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        self.count += 1
        if self.count == 1:
            self.signum = signum
            self.event.set()
            processes.kill_all()
            _say(self.message)
            return
        self.exit_now()

    def exit_now(self) -> None:
        """Kill tool processes, let a report write in progress finish, and leave the process."""
        processes.kill_all()
        self.write_lock.acquire(timeout=WRITE_WAIT)  # held for good: no record is saved after this
        if self.on_exit is not None:
            # In a thread: the main thread (running this handler) may hold a lock the callback needs.
            final = threading.Thread(target=self.on_exit, daemon=True)
            final.start()
            final.join(WRITE_WAIT)
        if self.flush is not None:
            sending = threading.Thread(target=self.flush, daemon=True)
            sending.start()
            sending.join(WRITE_WAIT)
        _say("stopped at once; the report holds every task finished so far; --resume continues" if self.on_exit
             else "stopped at once; no task had finished, so there is no report")
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os._exit(self.exit_code)
