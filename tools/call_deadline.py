"""Run one tool call under a deadline, so no tool can hold a task past its time limit.

The call runs in a daemon worker thread (with the caller's context variables, so the task's scope and
budgets still apply, and the call's deadline as its cancellation scope) and the agent waits at most the
deadline. A call that does not return is abandoned: Python cannot kill a thread, but tools that own processes
end them on their own timeouts (the python tool kills its child) or at the scope's deadline (a document's
conversion kills its child), and the task moves on.
"""

from __future__ import annotations

import contextvars
import threading
from typing import Any

from core import cancellation
from core.errors import TaskDeadlineExceeded, ToolError
from tools.base import Tool, ToolOutput


class ToolTimeoutError(ToolError):
    """A tool call did not return before its deadline; becomes an `Error: ...` observation."""

    def __init__(self, tool: str, seconds: float, task_limit: bool) -> None:
        why = "the task's time limit" if task_limit else "the per-call limit, AGENT_TOOL_TIMEOUT"
        super().__init__(f"the {tool} tool did not return within {seconds:g} s ({why}) and was abandoned; "
                         "try a smaller step (less data, a shorter computation) or another source")
        self.tool = tool
        self.seconds = seconds
        self.task_limit = task_limit


def call_deadline(per_call: float | None, task_left: float | None) -> tuple[float | None, bool]:
    """Seconds the next call may take (None: no limit) and whether the task's own limit sets it."""
    if task_left is None:
        return per_call, False
    task_left = max(task_left, 0.0)
    if per_call is None or task_left < per_call:
        return task_left, True
    return per_call, False


def run_tool(tool: Tool, args: dict[str, Any], seconds: float | None,
             task_limit: bool = False) -> str | ToolOutput:
    """tool.run(**args), or ToolTimeoutError once `seconds` pass (None: wait as long as it takes)."""
    if seconds is None:
        return tool.run(**args)
    box: dict[str, Any] = {}
    context = contextvars.copy_context()

    def work() -> None:
        try:
            box["out"] = context.run(_within, tool, args, seconds)
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, re-raised there
            box["exc"] = exc

    worker = threading.Thread(target=work, name=f"tool-{tool.name}", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive() or isinstance(box.get("exc"), TaskDeadlineExceeded):  # (it ended at the deadline)
        raise ToolTimeoutError(tool.name, seconds, task_limit)
    if "exc" in box:
        raise box["exc"]
    return box["out"]  # type: ignore[no-any-return]


def _within(tool: Tool, args: dict[str, Any], seconds: float) -> str | ToolOutput:
    """tool.run(**args) with the call's deadline as its scope: what it waits for ends when the call is abandoned."""
    with cancellation.scope(seconds):
        return tool.run(**args)
