"""The shell tool: one `bash -c` command in the task workspace, inside the python tool's sandbox and limits."""

from __future__ import annotations

import functools
import os
import shlex
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from config import Settings
from core.errors import ToolError
from sources.ledger import Read
from tools.base import ToolOutput
from tools.files import workspace_name
from tools.sandbox import Sandbox, pids
from tools.sandbox.limits import MAX_PROCESSES, STOPPED_NOTE
from tools.sandbox.oneshot import child_environment, nproc_limit, run_limited
from tools.sandboxed import FSIZE_LIMIT_MB, RunResult, SandboxedTool

# Commands models reach for that a minimal system may lack: the description names those found here.
_OPTIONAL = ("jq", "unzip", "pdftotext", "sqlite3", "xmllint", "file")
_SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"


@functools.cache
def _found_here() -> tuple[str, ...]:
    return tuple(name for name in _OPTIONAL if shutil.which(name, path=_SYSTEM_PATH))


class ShellTool(SandboxedTool):
    """Run a bash command confined like the python tool; nothing it starts outlives the call."""

    name = "shell"
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {"command": {"type": "string", "description": "A bash command line."}},
        "required": ["command"],
        "additionalProperties": False,
    }
    what = "command"
    brief = "Run a bash command line in the task workspace, in python's sandbox."

    def __init__(self, workspace: Path, settings: Settings, *,
                 inherited_env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None) -> None:
        super().__init__(workspace, settings, inherited_env=inherited_env, sandbox=sandbox)
        found = _found_here()
        self.description = (
            "Run a bash command in the task workspace, e.g. `unzip a.zip`, `grep -c word f.txt`, "
            "`sort f | uniq -c`, `wc -l *.csv`. Same sandbox and limits as python"
            + (", no network" if not self.sandbox.network else "") + "; every process it starts ends with "
            "the call. Returns its exit status, stdout, stderr."
            + (f" Installed: {', '.join(found)}." if found else "")
        )

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """The workspace files the command names (`wc -l data.csv`): numbered sources, its output their text."""
        try:
            words = shlex.split(str(args.get("command", "")))
        except ValueError:
            return []
        found = (workspace_name(self.workspace, w) for w in words if not w.startswith("-"))
        return [Read(name) for name in dict.fromkeys(n for n in found if n)]

    def run(self, **kwargs: Any) -> str:
        """Run the command confined in the workspace and describe how it went."""
        if os.name != "posix":
            raise ToolError("the shell tool needs a POSIX system (Linux or macOS)")
        command = str(kwargs["command"])
        if not command.strip():
            raise ToolError("the command is empty; send a bash command line in the 'command' field")
        bash = shutil.which("bash", path=_SYSTEM_PATH) or "/bin/bash"
        root = self.prepare_workspace()
        limits = [max(self.memory_mb, 0) * 2**20, self.cpu_seconds, FSIZE_LIMIT_MB * 2**20]
        group = pids.group()  # the kernel's bound on its processes, root included, where there is one
        argv = self.sandbox.command(root, [bash, "-c", command], limits, nproc=nproc_limit(), pids_group=group)
        spent: list[int] = []
        try:
            out, err, returncode, timed_out = run_limited(
                argv, root, child_environment(root, self.inherited_env), self.timeout,
                max_chars=max(self.stdout_chars, self.stderr_chars), drain_grace=self.drain_grace,
                over_budget=lambda: self.over_budget(root, spent))
        except OSError as exc:
            raise ToolError(f"could not start bash: {exc}") from exc
        finally:
            pids.release(group)
        # The launcher's last words when the process cap ended the command; processes killed in the same
        # instant may still have written after them, so they are looked for in all the bytes kept.
        note = STOPPED_NOTE.format(MAX_PROCESSES)
        too_many = returncode != 0 and note.encode() in bytes(err.head + err.tail)
        stderr = err.text(self.stderr_chars)
        if too_many:
            stderr = stderr.replace("\n" + note + "\n", "\n").strip("\n")
        result = RunResult(out.text(self.stdout_chars), stderr, returncode, timed_out and not spent, too_many)
        return self.observation(result, root, spent, timed_out and bool(spent))
