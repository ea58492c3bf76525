"""The project's error tree, in the three groups a user meets.

1. The model can recover: `ToolError` (and the parser's own ParseError in prompt/) becomes an
   observation that says what to fix, and the loop goes on.
2. The task fails: `LLMError` and its kin, `TaskStopError` (a spend cap, a --replay miss) and
   `TaskDeadlineExceeded` end one task; it is recorded with its status and the batch goes on.
3. The run fails: `ConfigError`, `TaskFileError` and `LLMFatalError` stop the run before or between tasks
   with exit code 2 and one clear line; `StopRequested` is the user's Ctrl-C / SIGTERM.

Errors that only one package raises and catches (a fetch's HTTP status, a provider's quota body, a
document that will not convert) live at the bottom of that package and derive from these.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from core.chat import Completion

# -- 1. the model can recover ------------------------------------------------------------------------


class ToolError(Exception):
    """A tool failed in a way the model can act on; becomes an `Error: ...` observation."""


# -- 2. the task fails, the batch goes on -----------------------------------------------------------


class LLMError(Exception):
    """A model call failed after retries: the task fails, the batch goes on."""

    def __init__(self, message: str, *, model: str = "", status: int | None = None,
                 attempts: int = 0) -> None:
        super().__init__(message)
        self.model = model
        self.status = status
        self.attempts = attempts
        self.billed: tuple[Completion, ...] = ()  # replies the provider billed before this failed


class EmptyCompletionError(LLMError):
    """The model returned nothing usable (empty text, safety block, refusal)."""

    finish_reason: str | None = None  # as the provider gave it, when the reply ended without text


class TaskStopError(LLMError):
    """A model or tool call refused for a reason that ends the task (a spend cap, a --replay miss)."""


class BudgetExceededError(TaskStopError):
    """The next call could take the task or the run past a cap; `cap` names it (--max-cost ...)."""

    def __init__(self, message: str, cap: str) -> None:
        super().__init__(message)
        self.cap = cap


class CacheMissError(TaskStopError):
    """--replay: a model or network call that is not in the cache (the task ends with status error)."""

    def __init__(self, message: str, key: str) -> None:
        super().__init__(message)
        self.key = key


class TaskDeadlineExceeded(Exception):  # noqa: N818 (named after what happened)
    """The task's time limit passed while a model call was waiting or retrying."""


# -- 3. the run fails: exit 2, one line ---------------------------------------------------------------


class ConfigError(Exception):
    """The run cannot start: a setting is missing or malformed (exit code 2)."""

    def __init__(self, message: str, setting: str | None = None) -> None:
        super().__init__(message)
        self.setting = setting


class TaskFileError(Exception):
    """The task file is missing, unreadable, binary, empty or has a bad entry (exit code 2)."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{'stdin' if str(path) == '-' else path}: {reason}")
        self.path = path
        self.reason = reason


class OutputError(Exception):
    """The report cannot be written safely (exit code 2, nothing of the user's touched)."""


class ResultsWriteError(Exception):
    """The records file could not be written (disk full, quota...): the run stops; what was saved stays."""

    def __init__(self, path: Path, exc: OSError, saved: int | None, records: Path) -> None:
        kept = (f"{records.name} holds the {saved} task(s) finished before, intact" if saved is not None else
                "the previous report and records were left as they were")
        super().__init__(f"cannot write {path} ({exc.strerror or exc}); the run was stopped. {kept}: free some "
                         "space, then rerun" + (" with --resume" if saved else ""))
        self.path, self.saved = path, saved


class LLMFatalError(LLMError):
    """A failure every task would hit (rejected key, unknown model): the run stops."""


class ContextWindowError(LLMFatalError):
    """The prompt does not fit the context window the model server runs with (its 400 says so).

    `window` is the server's window and `prompt_tokens` the prompt's size as it counted it (None when it did
    not say); the message names both and the fix for that kind of server. The agent first refits a task whose
    older steps can be folded; a prompt that cannot shrink stops the run, since every task would fail alike.
    """

    def __init__(self, message: str, *, model: str = "", status: int | None = 400, window: int | None = None,
                 prompt_tokens: int | None = None) -> None:
        super().__init__(message, model=model, status=status)
        self.window, self.prompt_tokens = window, prompt_tokens


class StopRequested(Exception):  # noqa: N818 (a request, not an error)
    """The user asked the batch to stop: the task is abandoned at this step boundary, not recorded."""
