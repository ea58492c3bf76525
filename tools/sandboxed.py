"""What the python and shell tools share: the sandbox and limits from the settings, the workspace budget,
and the observation of a run (how it ended, then stdout and stderr, each cut with the cut said)."""

from __future__ import annotations

import math
import os
import re
import signal
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from config import Settings
from tools.base import Tool
from tools.files import TOOL_DIRS
from tools.sandbox import MAX_PROCESSES, Sandbox, budget
from tools.sandbox import select as select_sandbox

FSIZE_LIMIT_MB = 100
_OUT_OF_MEMORY = re.compile(r"MemoryError\b|Cannot allocate memory|std::bad_alloc")


@dataclass
class RunResult:
    """How a run ended: captured (already capped) output, the exit code, whether it timed out or was
    stopped for starting too many processes."""

    stdout: str
    stderr: str
    returncode: int
    timed_out: bool
    too_many: bool = False


class SandboxedTool(Tool):
    """A tool that runs model-written code confined in the task workspace, under the python tool's limits."""

    stdout_chars = 12_000
    stderr_chars = 6_000
    drain_grace = 1.0
    what = "code"  # how observations name what ran

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

    def prepare_workspace(self) -> Path:
        """The workspace's real path, with its scratch folders made (checked with one stat once they are)."""
        root = self.workspace.resolve()
        if not os.path.isdir(root / TOOL_DIRS[-1]):
            for sub in TOOL_DIRS:
                (root / sub).mkdir(parents=True, exist_ok=True)
        return root

    def over_budget(self, root: Path, spent: list[int]) -> bool:
        """Whether the workspace holds more than its budget (the bytes found are appended to spent)."""
        if self.budget_bytes <= 0:
            return False
        used = budget.usage(str(root), stop_above=self.budget_bytes).bytes
        if used > self.budget_bytes:
            spent.append(used)
            return True
        return False

    def observation(self, result: RunResult, root: Path, spent: list[int], stopped: bool) -> str:
        """describe(result), told first when the workspace is over its budget (stopped: that ended the run)."""
        observation = self.describe(result)
        if stopped:  # the kill was ours: its signal status would only mislead
            observation = observation.split("\n", 1)[1] if "\n" in observation else ""
        if spent or self.over_budget(root, spent):
            what = "The process was stopped: the" if stopped else "The"
            note = (f"{what} workspace holds more than its budget of {budget.human(self.budget_bytes)} (at "
                    f"least {budget.human(spent[-1])}). Delete files you no longer need before writing more; "
                    "later calls are stopped as soon as the workspace is over its budget.")
            observation = note + "\n" + observation
        return observation

    def describe(self, result: RunResult) -> str:
        """The observation: how the run ended, then stdout and stderr (or a hint when nothing printed)."""
        parts = [self._status(result)]
        if result.stdout:
            parts.append(f"stdout:\n{result.stdout}")
        if result.stderr:
            parts.append(f"stderr:\n{result.stderr}")
        if not result.stdout and not result.stderr:
            parts.append("(no output) Nothing was printed; use print() to see values and results."
                         if self.what == "code" else "(no output)")
        return "\n".join(parts)

    def _status(self, result: RunResult) -> str:
        if result.timed_out:
            return (f"Timed out after {self.timeout:g} s: the process group was killed (nothing it started "
                    f"is still running). Make the {self.what} faster, process less data, or split the work.")
        if result.too_many:
            return (f"Stopped: the {self.what} started more than {MAX_PROCESSES} processes at once (the "
                    "limit); every one of them was killed.")
        if result.returncode != 0 and _OUT_OF_MEMORY.search(result.stderr):
            return (f"Ran out of memory (limit {self.memory_mb} MB; exit status {result.returncode}). "
                    "Use less data at once, e.g. read files in chunks.")
        if result.returncode == 0:
            return "Exit status 0 (success)."
        if result.returncode > 0:
            return f"Exit status {result.returncode} (the {self.what} failed; see stderr)."
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
