"""The python tool: run model-written code in a fresh, resource-limited subprocess inside the workspace."""

from __future__ import annotations

import contextlib
import math
import os
import re
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from config import Settings
from core.errors import ToolError
from core.text import truncate_middle
from sources.ledger import Read
from tools import processes
from tools.base import Tool, ToolOutput
from tools.files import files_named
from tools.sandbox import Sandbox, budget
from tools.sandbox import select as select_sandbox

FSIZE_LIMIT_MB = 100
_CHUNK = 65_536
# Variables of the parent's environment that may reach the child; everything else (API keys!) is dropped.
_PASS_THROUGH = frozenset({"PATH", "LANG", "LANGUAGE", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR"})
_STANDARD_PATH = ("/usr/local/bin", "/opt/homebrew/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
_OUT_OF_MEMORY = re.compile(r"MemoryError\b|Cannot allocate memory|std::bad_alloc")
_FENCED = re.compile(r"\s*```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)\n?[ \t]*```\s*", re.S | re.I)

# The script's own interpreter: -I keeps the workspace off the start of sys.path (a planted json.py or
# sitecustomize.py never runs) and ignores PYTHON* variables, so their effects are flags here; the workspace
# is appended after the standard library and site-packages so the model's own helper modules still import.
# Only dunder names are left in __main__; one `<string>` frame precedes the script's in tracebacks.
_RUNNER = ("__import__('sys').path.append(__import__('sys').argv.pop(2)); "
           "__file__ = __import__('sys').argv.pop(1); __import__('sys').argv[0] = __file__; "
           "exec(compile(open(__file__, 'rb').read(), __file__, 'exec'))")
_INTERPRETER_FLAGS = ("-I", "-u", "-B", "-X", "utf8")
_POLL = 0.5  # seconds between workspace budget checks while a script runs


@dataclass
class RunResult:
    """How a run ended: captured (already capped) output, the exit code, whether it timed out."""

    stdout: str
    stderr: str
    returncode: int
    timed_out: bool


class _Capture:
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


def child_environment(workspace: Path, inherited: Mapping[str, str] | None = None) -> dict[str, str]:
    """The child's whole environment: an allowlist of inherited variables plus workspace-local dirs."""
    root = str(workspace)
    bin_dirs = [os.path.dirname(sys.executable), *(d for d in _STANDARD_PATH if os.path.isdir(d))]
    env = {"PATH": os.pathsep.join(dict.fromkeys(bin_dirs)), "LANG": "C.UTF-8"}
    for key, value in (inherited or {}).items():
        if key in _PASS_THROUGH or key.startswith("LC_"):
            env[key] = value
    tmp = os.path.join(root, ".tmp")
    env.update({
        "HOME": os.path.join(root, ".home"), "TMPDIR": tmp, "TMP": tmp, "TEMP": tmp,
        "PYTHONIOENCODING": "utf-8", "PYTHONUTF8": "1",
        # Unbuffered, so output printed before a timeout or crash is not lost.
        "PYTHONUNBUFFERED": "1", "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg",
        # One BLAS thread: thread pools reserve address space (RLIMIT_AS) and burn CPU time (RLIMIT_CPU).
        "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "MALLOC_ARENA_MAX": "2",
    })
    return env


def _nproc_limit() -> int:
    """RLIMIT_NPROC for the child: the user's current thread count plus room for 256 more (0 for root,
    whom the limit does not bind). The count is per user, so a fixed number could forbid any fork."""
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
    return count + 256


def strip_code_fences(code: str) -> str:
    """The code without the Markdown ``` fence models often wrap it in."""
    match = _FENCED.fullmatch(code)
    return match.group(1) if match else code


def run_limited(argv: list[str], cwd: Path, env: Mapping[str, str], timeout: float, *,
                max_chars: int = 20_000, drain_grace: float = 1.0,
                over_budget: Callable[[], bool] | None = None) -> tuple[_Capture, _Capture, int, bool]:
    """Run argv in its own process group; stop it on timeout or when over_budget() turns true, then
    kill the whole group. With the launcher as leader, SIGTERM first lets it sweep every descendant."""
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True, close_fds=True)
    processes.register(proc)
    out, err = _Capture(max_chars), _Capture(max_chars)
    sel = selectors.DefaultSelector()
    assert proc.stdout is not None and proc.stderr is not None
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    pidfd = _pidfd(proc.pid)
    if pidfd is not None:  # readable when the child exits: no polling delay
        sel.register(pidfd, selectors.EVENT_READ, None)
    timed_out = False
    try:
        timed_out = _wait(proc.pid, sel, time.monotonic() + timeout, pidfd is not None, over_budget)
        if timed_out:
            _terminate(proc.pid, min(drain_grace, 1.0))
        # The leader is alive or an unreaped zombie, so its group id cannot have been reused yet.
        _kill_group(proc.pid)
        if pidfd is not None:
            sel.unregister(pidfd)
        # Killed processes close their ends at once; one that escaped the group may hold them forever.
        grace_end = time.monotonic() + drain_grace
        while sel.get_map() and (left := grace_end - time.monotonic()) > 0:
            _pump(sel, left)
    finally:
        _kill_group(proc.pid)  # again, for an exception (e.g. Ctrl-C) that skipped the kill above
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        proc.stdout.close()
        proc.stderr.close()
        returncode = proc.wait()
        processes.unregister(proc)
    return out, err, returncode, timed_out


def _wait(pid: int, sel: selectors.BaseSelector, deadline: float, has_pidfd: bool,
          over_budget: Callable[[], bool] | None) -> bool:
    """Pump output until the leader exits (False) or the deadline passes or the budget is spent (True)."""
    next_check = time.monotonic() + _POLL
    while not _exited(pid):
        now = time.monotonic()
        if now >= deadline:
            return True
        if over_budget is not None and now >= next_check:
            if over_budget():
                return True
            # A huge workspace makes each walk slow: never spend more than a tenth of the time walking.
            next_check = now + max(_POLL, 10 * (time.monotonic() - now))
        wait = min(deadline, next_check if over_budget else deadline) - now
        _pump(sel, wait if has_pidfd else min(wait, 0.05))
    return False


def _terminate(pid: int, grace: float) -> None:
    """SIGTERM the launcher (it kills and reaps everything under it) and give it a moment to do so."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + grace
    while not _exited(pid) and time.monotonic() < end:
        time.sleep(0.005)


def _pump(sel: selectors.BaseSelector, timeout: float) -> None:
    for key, _ in sel.select(timeout):
        if key.data is None:
            continue
        chunk = os.read(key.fd, _CHUNK)
        if chunk:
            key.data.feed(chunk)
        else:
            sel.unregister(key.fileobj)


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _exited(pid: int) -> bool:
    # WNOWAIT leaves the zombie in place: the process group stays addressable for the final kill.
    return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


class PythonTool(Tool):
    """Run Python code in a fresh subprocess in the task workspace, with a timeout and memory limit."""

    name = "python"
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "code": {"type": "string",
                     "description": "A complete program; print() what you need."},
        },
        "required": ["code"],
        "additionalProperties": False,
    }
    stdout_chars = 12_000
    stderr_chars = 6_000
    drain_grace = 1.0

    def __init__(self, workspace: Path, settings: Settings, *,
                 inherited_env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None) -> None:
        self.workspace = Path(workspace)
        self.timeout = settings.python_timeout
        self.memory_mb = settings.python_memory_mb
        self.budget_bytes = max(settings.workspace_budget_mb, 0) * 2**20
        self.inherited_env = inherited_env
        self.sandbox = sandbox or select_sandbox(settings.sandbox, settings.python_network)
        # A backstop only: the wall-clock timeout normally fires first.
        self.cpu_seconds = math.ceil(self.timeout) + 5
        self.description = (
            "Run Python 3 code in the workspace; only what it prints comes back. Each call is a fresh process: "
            "files persist, variables do not. Limits: "
            f"{self.timeout:g} s, {self.memory_mb} MB of memory, files up to {FSIZE_LIMIT_MB} MB, "
            f"{budget.human(self.budget_bytes)} in all; then every process it started is killed."
            + self._confinement()
        )

    def _confinement(self) -> str:
        box = self.sandbox
        if box.backend == "none":
            return ""
        text = " Sandboxed: it reads only the workspace and installed libraries; no multiprocessing pools."
        if box.network:
            return text
        return text + " It has no network access: download files first with scrape(url, save_as=\"name\")."

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """The workspace files the code names (an attachment it opens): numbered sources, its output their text."""
        return [Read(name) for name in files_named(self.workspace, str(args.get("code", "")))]

    def run(self, **kwargs: Any) -> str:
        """Save the code as a script in the workspace, run it confined and describe how it went."""
        if os.name != "posix":
            raise ToolError("the python tool needs a POSIX system (Linux or macOS)")
        code = strip_code_fences(str(kwargs["code"]))
        if not code.strip():
            raise ToolError("the code is empty; send a Python program in the 'code' field")
        root = self.workspace.resolve()
        for sub in (".home", ".tmp", ".python"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        script = self._save_script(root / ".python", code)
        limits = [max(self.memory_mb, 0) * 2**20, self.cpu_seconds, FSIZE_LIMIT_MB * 2**20]
        child = [sys.executable, *_INTERPRETER_FLAGS, "-c", _RUNNER, str(script), str(root)]
        argv = self.sandbox.command(root, child, limits, nproc=_nproc_limit())
        env = child_environment(root, self.inherited_env)
        spent: list[int] = []
        try:
            out, err, returncode, timed_out = run_limited(
                argv, root, env, self.timeout, max_chars=max(self.stdout_chars, self.stderr_chars),
                drain_grace=self.drain_grace, over_budget=lambda: self._over_budget(root, spent))
        except OSError as exc:
            raise ToolError(f"could not start the Python interpreter: {exc}") from exc
        result = RunResult(out.text(self.stdout_chars), err.text(self.stderr_chars), returncode,
                           timed_out and not spent)
        observation = self.describe(result)
        stopped = bool(timed_out and spent)
        if stopped:  # the kill was ours: its signal status would only mislead
            observation = observation.split("\n", 1)[1] if "\n" in observation else ""
        if spent or self._over_budget(root, spent):
            observation = self._budget_note(spent[-1], stopped=stopped) + "\n" + observation
        return observation

    def _over_budget(self, root: Path, spent: list[int]) -> bool:
        if self.budget_bytes <= 0:
            return False
        used = budget.usage(str(root), stop_above=self.budget_bytes).bytes
        if used > self.budget_bytes:
            spent.append(used)
            return True
        return False

    def _budget_note(self, used: int, *, stopped: bool) -> str:
        what = "The process was stopped: the" if stopped else "The"
        return (f"{what} workspace holds more than its budget of {budget.human(self.budget_bytes)} (at least "
                f"{budget.human(used)}). Delete files you no longer need (e.g. with os.remove) before "
                "writing more; later calls are stopped as soon as the workspace is over its budget.")

    @staticmethod
    def _save_script(folder: Path, code: str) -> Path:
        # A real file, not -c, so tracebacks show line numbers; O_EXCL so two runs never share one.
        # Through a handle of the folder, never following a link model code put in its place.
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            number = len(os.listdir(dir_fd)) + 1
            while True:
                name = f"step-{number:03d}.py"
                try:
                    fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644, dir_fd=dir_fd)
                except FileExistsError:
                    number += 1
                    continue
                with os.fdopen(fd, "w", encoding="utf-8") as fh:
                    fh.write(code if code.endswith("\n") else code + "\n")
                return folder / name
        finally:
            os.close(dir_fd)

    def describe(self, result: RunResult) -> str:
        """The observation: how the run ended, then stdout and stderr (or a hint when nothing printed)."""
        parts = [self._status(result)]
        if result.stdout:
            parts.append(f"stdout:\n{result.stdout}")
        if result.stderr:
            parts.append(f"stderr:\n{result.stderr}")
        if not result.stdout and not result.stderr:
            parts.append("(no output) Nothing was printed; use print() to see values and results.")
        return "\n".join(parts)

    def _status(self, result: RunResult) -> str:
        if result.timed_out:
            return (f"Timed out after {self.timeout:g} s: the process group was killed (nothing it started "
                    "is still running). Make the code faster, process less data, or split the work.")
        if result.returncode != 0 and _OUT_OF_MEMORY.search(result.stderr):
            return (f"Ran out of memory (limit {self.memory_mb} MB; exit status {result.returncode}). "
                    "Use less data at once, e.g. read files in chunks.")
        if result.returncode == 0:
            return "Exit status 0 (success)."
        if result.returncode > 0:
            return f"Exit status {result.returncode} (the code failed; see stderr)."
        return self._signal_status(-result.returncode)

    def _signal_status(self, signum: int) -> str:
        try:
            name = signal.Signals(signum).name
        except ValueError:
            name = f"signal {signum}"
        why = {
            "SIGXCPU": f"it used up its CPU time limit of {self.cpu_seconds} s",
            "SIGKILL": "possibly by the system because it used too much memory",
            "SIGSEGV": f"it crashed; this can also mean it ran out of memory (limit {self.memory_mb} MB)",
            "SIGABRT": f"it aborted; this can also mean it ran out of memory (limit {self.memory_mb} MB)",
        }.get(name)
        return f"Killed by {name}" + (f" ({why})." if why else ".")
