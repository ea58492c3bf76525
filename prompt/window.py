"""The prompt and the model's context window: the budget a task starts with (--context-budget, else what the
model's window leaves), and the budget after a server named its window in a refusal."""

from __future__ import annotations

from cache.probes import local_window
from config import Settings
from llm import context_window
from providers.context_window import kept_default_max_tokens, reply_cap

DEFAULT_BUDGET = 32_000  # tokens, when neither --context-budget nor the model's window is known

MAX_DEFAULT_BUDGET = 128_000
WINDOW_SHARE = 0.7  # of (context window - completion tokens): room for estimate error and provider overhead


def window_budget(window: int, reply_tokens: int) -> int:
    """The prompt budget for a window: a safe share of what the reply leaves, at least 1,000 tokens."""
    # Million-token windows would make every prompt cost a fortune: cap the default, --context-budget lifts it.
    return min(max(int((window - reply_tokens) * WINDOW_SHARE), 1000), MAX_DEFAULT_BUDGET)


def refit_budget(window: int, max_tokens: int | None) -> int:
    """The budget to keep to once a server named its window: what it leaves after a reply sized to it."""
    return window_budget(window, reply_cap(max_tokens or window, window, True))


def default_budget(settings: Settings, model_spec: str) -> int:
    """--context-budget, else a safe share of the model's window minus the completion, else 32k."""
    # A local server's window is asked for even with --context-budget: a prompt over it is warned about.
    local = local_window(model_spec, settings)
    if settings.context_budget:
        return settings.context_budget
    window = local or context_window(model_spec, settings=settings)
    if not window:
        return DEFAULT_BUDGET
    # A local server's reply is sized to its window (providers/context_window.py): the prompt gets the rest.
    reply = reply_cap(settings.max_tokens, window, kept_default_max_tokens(settings)) if local else settings.max_tokens
    return window_budget(window, reply)
