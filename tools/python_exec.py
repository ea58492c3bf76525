"""The python tool: model-written code in the task's own confined Python session, which keeps its variables."""

from __future__ import annotations

import os
import re
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from config import Settings
from core.errors import ToolError
from sources.ledger import Read
from tools.base import ToolOutput
from tools.files import files_named
from tools.sandbox import Sandbox, budget
from tools.sandbox.oneshot import child_environment, nproc_limit
from tools.sandbox.sessions import CallResult, PythonSession
from tools.sandboxed import FSIZE_LIMIT_MB, RunResult, SandboxedTool

_FENCED = re.compile(r"\s*```[ \t]*(?:python3?|py)?[ \t]*\n(.*?)\n?[ \t]*```\s*", re.S | re.I)
# Why a session ended, as the next call's note says it.
_ENDED = {"killed": "it timed out", "processes": "it started too many processes", "memory": "it ran out of memory",
          "file_size": "it wrote a file over the size limit", "budget": "the workspace went over its budget",
          "gone": "it was stopped from outside", "exit": "the interpreter exited or crashed"}


def strip_code_fences(code: str) -> str:
    """The code without the Markdown ``` fence models often wrap it in."""
    match = _FENCED.fullmatch(code)
    return match.group(1) if match else code


class PythonTool(SandboxedTool):
    """Run Python code in the task's session (started on the first call), with a timeout and memory limit."""

    name = "python"
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "code": {"type": "string", "description": "Python code; print() what you need."},
        },
        "required": ["code"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, settings: Settings, *,
                 inherited_env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None) -> None:
        super().__init__(workspace, settings, inherited_env=inherited_env, sandbox=sandbox)
        self.session: PythonSession | None = None
        self._lost: str | None = None  # why the last session ended, for the next call's note
        self.description = (
            "Run Python 3 in this task's own session, in the workspace; only what it prints comes back. "
            "Variables, functions and imports persist between calls. Limits per call: "
            f"{self.timeout:g} s, {self.memory_mb} MB of memory, files up to {FSIZE_LIMIT_MB} MB, "
            f"{budget.human(self.budget_bytes)} in all; then every process it started is killed, and a "
            "timeout, crash or limit resets the session." + self._confinement()
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
        """Save the code as a script in the workspace, run it in the task's session and describe how it went."""
        if os.name != "posix":
            raise ToolError("the python tool needs a POSIX system (Linux or macOS)")
        code = strip_code_fences(str(kwargs["code"]))
        if not code.strip():
            raise ToolError("the code is empty; send a Python program in the 'code' field")
        root = self.prepare_workspace()
        script = self._save_script(root / ".python", code)
        spent: list[int] = []
        try:
            call = self._session(root).call(
                str(script), self.cpu_seconds, self.timeout, max_chars=max(self.stdout_chars, self.stderr_chars),
                drain_grace=self.drain_grace, over_budget=lambda: self.over_budget(root, spent))
        except OSError as exc:
            raise ToolError(f"could not start the Python session: {exc}") from exc
        stopped = call.timed_out and bool(spent)
        if call.limit and not call.ended:  # a limit hit leaves the interpreter in doubt: start afresh
            self.close()
            call.ended = call.limit
        result = RunResult(call.stdout.text(self.stdout_chars), call.stderr.text(self.stderr_chars),
                           call.returncode, call.timed_out and not spent, too_many=call.ended == "processes")
        return self._with_session_notes(call, self.observation(result, root, spent, stopped), stopped)

    def _session(self, root: Path) -> PythonSession:
        if self.session is None:
            limits = [max(self.memory_mb, 0) * 2**20, 0, FSIZE_LIMIT_MB * 2**20]  # CPU: set per call
            env = child_environment(root, self.inherited_env)
            self.session = PythonSession(self.sandbox.session_request(root, env, limits, nproc_limit(1024)))
            weakref.finalize(self, self.session.close)  # a tool dropped without close() leaves nothing running
        return self.session

    def _with_session_notes(self, call: CallResult, observation: str, stopped: bool) -> str:
        """Say when this call began a new session after one ended, and when it ended the session itself."""
        lost = self._lost or (_ENDED[call.lost] if call.lost else None)
        if call.fresh and lost:
            observation = (f"Note: this call ran in a new Python session: the previous one ended ({lost}), "
                           "so variables, functions and imports from earlier calls are gone (workspace files "
                           "remain).\n" + observation)
        self._lost = None
        if call.ended:
            self._lost = _ENDED["budget" if stopped else call.ended]
            observation += ("\nThe Python session ended with this call: its variables are gone, and the next "
                            "call starts a new session.")
        return observation

    def close(self) -> None:
        """End the task's session: nothing it started keeps running."""
        if self.session is not None:
            self.session.close()
        self._lost = None

    @staticmethod
    def _save_script(folder: Path, code: str) -> Path:
        # A real file, so tracebacks show line numbers; O_EXCL so two runs never share one.
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
