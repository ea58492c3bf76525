"""Request defaults that depend on the model family, as the model makers advise them."""

from __future__ import annotations

import re

from core.chat import split_spec

# Families whose makers advise leaving temperature at the model's default: Google recommends 1.0 for
# Gemini 3 (lower values can cause looping); Anthropic deprecated it for the models after Opus 4.6, which
# answer "`temperature` is deprecated for this model" (older ones, e.g. claude-haiku-4-5, still take it).
_KEEP_DEFAULT_TEMPERATURE = (re.compile(r"^gemini-3"),
                             re.compile(r"^claude-(opus-4-[7-9]|opus-5|sonnet-5|haiku-5|fable)"))
PROJECT_TEMPERATURE = 0.0  # deterministic runs for every other family when AGENT_TEMPERATURE is unset


def keeps_default_temperature(model: str) -> bool:
    """True when the model's maker advises against changing its sampling temperature."""
    name = model.lower().removeprefix("models/")
    return any(p.search(name) for p in _KEEP_DEFAULT_TEMPERATURE)


def request_temperature(model: str, configured: float | None, requested: float | None) -> float | None:
    """The temperature to send: the user's setting wins, else the caller's, else the project's default;
    None (omit it) for families that should keep their own default unless the user set one."""
    if configured is not None:
        return configured if requested is None else requested
    if keeps_default_temperature(model):
        return None
    return PROJECT_TEMPERATURE if requested is None else requested


# Reasoning models spend part of max_tokens thinking before any visible text; a shorter reply budget than this
# mostly comes back empty (and billed). 1,024 is also the least thinking budget Anthropic's extended thinking takes.
_THINKS_FIRST = re.compile(r"^(gpt-5|o1|o3|o4|gemini-2\.5|gemini-3)")
MIN_REPLY, MIN_THINKING_REPLY = 256, 1024


def min_completion(model: str) -> int:
    """The shortest reply budget worth paying for with this model (a spend cap refuses calls below it)."""
    name = split_spec(model)[1].lower()
    return MIN_THINKING_REPLY if _THINKS_FIRST.search(name.removeprefix("models/")) else MIN_REPLY
