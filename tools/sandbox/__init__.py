"""The OS sandbox for model-written code: pick a backend once per run, confine a command or a Python session.

Owns the backends (Landlock with its mount namespace, bubblewrap, seccomp, the capability drop), the paths
confined code may read, the workspace byte budget and its defusing at a task's end (defuse.py), one-shot
runs through the launcher (oneshot.py, launcher.py: the shell tool), the python tool's sessions
(sessions.py in the agent; server.py, repl.py and wire.py in their own processes), and calls run in a forked,
limited and confined child of a pre-warmed interpreter (forks.py in the agent, fork_server.py in its own
process: every document's conversion, for tools/documents/confined.py). check_setup's live probe of it is
tools/sandbox_probe.py. May import core, config and tools.processes (never the tools it serves: the fork
server imports what it runs by name); the python and shell tools, MCP's stdio servers, the batch runner
(defuse) and the document converters use it.
"""

from __future__ import annotations

import functools
import marshal
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from config import Settings
from core.errors import ConfigError
from tools.sandbox import bwrap, landlock, paths, pids, seccomp
from tools.sandbox.limits import MAX_PROCESSES, SUPERVISOR_NICE

MODES = ("auto", "landlock", "bwrap", "require", "none")
LAUNCHER = str(Path(__file__).with_name("launcher.py"))
REPL = str(Path(__file__).with_name("repl.py"))
SERVER = str(Path(__file__).with_name("server.py"))
SESSION_FLAGS = ("-I", "-B", "-u", "-X", "utf8")  # the session server's interpreter (and repl.py's under bwrap)
_UNCONTAINED = "model code can read your files (keys in .env, ~/.ssh), reach the network and signal the agent"


class SandboxUnavailableError(ConfigError):
    """The sandbox the settings ask for cannot be had on this machine (exit 2 before the first task)."""

    def __init__(self, mode: str, reason: str) -> None:
        super().__init__(f"AGENT_SANDBOX={mode}: no sandbox available ({reason}); install bubblewrap, use a "
                         "kernel with Landlock, or set AGENT_SANDBOX=none to run unconfined", "sandbox")
        self.mode = mode
        self.reason = reason


@dataclass(frozen=True)
class Sandbox:
    """The chosen backend and what it can and cannot contain on this machine."""

    backend: str  # "landlock", "bwrap" or "none"
    network: bool = False
    landlock_abi: int = 0
    seccomp: bool = False
    gaps: tuple[str, ...] = field(default=())  # mechanisms missing here, in words
    mounts: bool = False  # Landlock: the code runs in a read-only mount namespace with private folders hidden

    def blocks(self) -> list[str]:
        """What this sandbox stops, in words."""
        out: list[str] = []
        if self.backend == "landlock":
            out += landlock.contained(self.landlock_abi, self.network)
            if self.mounts:
                out.append("changes to files outside the workspace (read-only mount namespace); homes, run, "
                           "project and temp folders hidden")
        elif self.backend == "bwrap":
            out += ["files outside the workspace and system directories", "other processes (PID namespace)"]
            out += [] if self.network else ["all network (empty network namespace)"]
        if self.backend != "none":
            out.append("capabilities (every set emptied, securebits locked, no_new_privs)")
        if self.seccomp:
            out.append("ptrace, other processes' memory, namespaces, mounts, bpf, io_uring, keyctl, hostname, "
                       "clock, kernel log; set-user/group-ID files and device nodes")
            out += [] if self.network else ["non-UNIX sockets (TCP, UDP, raw)"]
        out.append("leftover processes (subreaper sweep, PDEATHSIG)")
        return out

    def describe(self) -> str:
        """One line: the backend, what it blocks and what is not contained."""
        text = f"{self.backend}" + (f" (Landlock ABI {self.landlock_abi})" if self.backend == "landlock" else "")
        text += (" + seccomp" if self.seccomp else "") + "; blocks: " + "; ".join(self.blocks())
        if self.network:
            text += "; network opened by AGENT_PYTHON_NETWORK"
        return text + (f"; not contained: {'; '.join(self.gaps)}" if self.gaps else "")

    def warning(self) -> str | None:
        """The one warning of a run that is not fully contained, naming what is missing."""
        if not self.gaps:
            return None
        return f"warning: python tool sandbox is {self.backend}: {'; '.join(self.gaps)}"

    def command(self, workspace: Path, argv: list[str], limits: list[int], nproc: int = 0,
                pids_group: str | None = None) -> list[str]:
        """The full command that runs argv confined in the workspace, through the launcher (first put in
        pids_group, a cgroup from pids.group(), where there is one)."""
        full = self._command(workspace, argv, limits, nproc)
        return pids.join_argv(pids_group, full) if pids_group else full

    def _command(self, workspace: Path, argv: list[str], limits: list[int], nproc: int) -> list[str]:
        cfg: dict[str, object] = {"argv": argv, "limits": limits, "nproc": nproc, "parent": os.getpid(),
                                  "procs": MAX_PROCESSES, "nice": _own_nice(), **self._rules(workspace)}
        launcher = [sys.executable, "-I", "-S", LAUNCHER]
        if self.backend == "bwrap":
            cfg["parent"] = 0  # inside the PID namespace the parent is bwrap's init
            # The launcher cannot raise its own priority in there (no capabilities): it starts raised.
            nice = shutil.which("nice") if os.geteuid() == 0 else None
            first = [nice, "-n", str(SUPERVISOR_NICE)] if nice else []
            return [*first, *self._bwrap(workspace), *launcher, marshal.dumps(cfg).hex()]
        return [*launcher, marshal.dumps(cfg).hex()]

    def session_request(self, workspace: Path, env: dict[str, str], limits: list[int], nproc: int = 0
                        ) -> dict[str, object]:
        """What the session server needs to start a confined Python session in the workspace (sessions.py)."""
        cfg: dict[str, object] = {"workspace": str(workspace), "env": env, "limits": limits, "nproc": nproc,
                                  "procs": MAX_PROCESSES, "nice": _own_nice(), **self._rules(workspace)}
        if self.backend == "bwrap":
            cfg["exec"] = [*self._bwrap(workspace), sys.executable, *SESSION_FLAGS, REPL]
        return cfg

    def _rules(self, workspace: Path) -> dict[str, object]:
        """The seccomp program and the Landlock ruleset of this backend, as the launcher and sessions take them."""
        rules: dict[str, object] = {}
        if self.seccomp:
            rules["seccomp"] = seccomp.program(network=self.network)
        if self.backend == "landlock":
            rules["landlock"] = landlock_rules([str(workspace)], self.network)
        if self.mounts:
            rules["mounts"] = {"workspace": str(workspace), "keep": _read_only(), "hide": paths.hidden_dirs()}
        return rules

    def _bwrap(self, workspace: Path) -> list[str]:
        return bwrap.command([*_read_only(), os.path.dirname(LAUNCHER)], str(workspace), network=self.network,
                             drops_itself=True)


def _own_nice() -> int:
    """The agent's nice value: confined code runs at it (`nice python main.py` keeps model code niced too)."""
    return os.getpriority(os.PRIO_PROCESS, 0) if hasattr(os, "getpriority") else 0


def _read_only() -> list[str]:
    return paths.read_only_paths(tuple(paths.protected_dirs()))


def landlock_rules(writable: list[str], network: bool) -> dict[str, object]:
    """The Landlock ruleset launcher.confine applies: system and interpreter paths read-only, `writable`
    read-write (with the devices any program writes: /dev/null...), the network as asked."""
    return {"ro": _read_only(), "rw": writable, "files_rw": list(paths.WRITABLE_DEVICES), "network": network}


@functools.cache
def seccomp_problem() -> str:
    """'' when the seccomp filter can be built here, else why not."""
    try:
        seccomp.program(network=False)
    except (ImportError, RuntimeError, OSError) as exc:
        return f"seccomp unavailable ({exc}; pip install pyseccomp and the system's libseccomp)"
    return ""


@functools.cache
def mounts_problem() -> str:
    """'' when confined code can have its own read-only mount namespace here (mounts.py), else why not."""
    if sys.platform != "linux":
        return "mount namespaces are Linux only"
    code = "import sys; sys.path.insert(0, sys.argv[1]); import mounts; mounts.isolate(sys.argv[2], [], [sys.argv[2]])"
    with tempfile.TemporaryDirectory(prefix="agent-mounts-probe-") as folder:
        return bwrap.trial([sys.executable, "-I", "-S", "-c", code, os.path.dirname(LAUNCHER), folder],
                           "no mount namespace")


@functools.cache
def select(mode: str = "auto", network: bool = False) -> Sandbox:
    """The sandbox for this machine and mode; SandboxUnavailableError when a required one is missing."""
    if mode not in MODES:
        raise ConfigError(f"AGENT_SANDBOX must be one of {', '.join(MODES)}, not {mode!r}", "sandbox")
    abi = landlock.abi_version() if sys.platform == "linux" else 0
    sec_gap = seccomp_problem() if sys.platform == "linux" else "seccomp is Linux only"
    net_gap = ["network is open to model code (AGENT_PYTHON_NETWORK)"] if network else []
    if mode == "none":
        return Sandbox("none", network, gaps=(f"AGENT_SANDBOX=none: {_UNCONTAINED}",))
    bw_gap = bwrap.probe() if sys.platform == "linux" else "bubblewrap is Linux only"
    if mode == "bwrap" or (mode in ("auto", "require") and abi < 4 and not bw_gap):
        if bw_gap:
            raise SandboxUnavailableError(mode, bw_gap)
        return Sandbox("bwrap", network, seccomp=not sec_gap, gaps=tuple(net_gap + ([sec_gap] if sec_gap else [])))
    if abi >= 4 or (abi >= 1 and mode in ("landlock", "auto")):
        return _landlock(abi, network, net_gap, sec_gap)
    reason = f"Landlock ABI {abi} on this kernel; {bw_gap or 'bwrap not usable'}"
    if mode != "auto":
        raise SandboxUnavailableError(mode, reason)
    return Sandbox("none", network, gaps=(f"no sandbox ({reason}): {_UNCONTAINED}",))


def _landlock(abi: int, network: bool, net_gap: list[str], sec_gap: str) -> Sandbox:
    """The Landlock backend, with what this kernel's ABI, seccomp and mount namespaces leave uncontained."""
    gaps = list(net_gap)
    if abi < 4:
        gaps.append(f"Landlock ABI {abi} < 4: TCP is blocked only by seccomp")
    if abi < 6:
        gaps.append(f"Landlock ABI {abi} < 6: model code can signal the agent")
    if sec_gap:
        gaps.append(sec_gap + ": UDP, ptrace, namespaces, set-user-ID files and device nodes are not blocked")
    ns_gap = mounts_problem()
    if ns_gap:
        gaps.append(f"{ns_gap}: model code can change the mode, times and extended attributes of files "
                    "outside its workspace that its user owns, and see which files exist anywhere")
    return Sandbox("landlock", network, landlock_abi=abi, seccomp=not sec_gap, gaps=tuple(gaps), mounts=not ns_gap)


def prepare_sandbox(settings: Settings) -> str | None:
    """Choose the run's sandbox before the first task; its warning (printed once), if any, saying where an
    AGENT_SANDBOX=none came from (a flag, the environment, a .env's path)."""
    warning = select(settings.sandbox, settings.python_network).warning()
    if warning and settings.sandbox == "none":
        return warning.replace("AGENT_SANDBOX=none", f"AGENT_SANDBOX=none (from {settings.origin('sandbox')})", 1)
    return warning


def harden_process() -> None:
    """PR_SET_DUMPABLE 0: same-user processes can no longer read our /proc environ, memory or ptrace us."""
    if sys.platform != "linux":
        return
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE
