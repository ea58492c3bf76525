"""The prompt and the model's context window: the budget a window leaves, and the budget after a server named its
window in a refusal."""

from __future__ import annotations

from providers.context_window import reply_cap

MAX_DEFAULT_BUDGET = 128_000
WINDOW_SHARE = 0.7  # of (context window - completion tokens): room for estimate error and provider overhead


def window_budget(window: int, reply_tokens: int) -> int:
    """The prompt budget for a window: a safe share of what the reply leaves, at least 1,000 tokens."""
    # Million-token windows would make every prompt cost a fortune: cap the default, --context-budget lifts it.
    return min(max(int((window - reply_tokens) * WINDOW_SHARE), 1000), MAX_DEFAULT_BUDGET)


def refit_budget(window: int, max_tokens: int | None) -> int:
    """The budget to keep to once a server named its window: what it leaves after a reply sized to it."""
    return window_budget(window, reply_cap(max_tokens or window, window, True))
