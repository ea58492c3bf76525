"""The models tools call on their own (look): built like the run's model and held to the running task's caps."""

from __future__ import annotations

import functools

from cache.model import model_for
from config import Settings
from core.chat import ChatModel
from providers.budget import under_tool_budget


def tool_model(spec: str, settings: Settings) -> ChatModel:
    """A tool's own model: --cache / --replay aware and, inside a task with caps, checked before each call."""
    return under_tool_budget(_tool_interface(spec, settings))


@functools.lru_cache(maxsize=32)
def _tool_interface(spec: str, settings: Settings) -> ChatModel:
    """One model per spec and run (settings are frozen), so its clients, prices, circuit breaker and
    reachability record last for the run instead of being rebuilt on every tool call."""
    return model_for(spec, settings)
