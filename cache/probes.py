"""A local server's context-window probe through the cache: recorded under --cache, answered under --replay."""

from __future__ import annotations

from collections.abc import Callable

from cache.store import content_key, open_store
from config import Settings
from llm import local_context_window

KIND = "context_window"


def recorded_window(model_spec: str, settings: Settings,
                    probe: Callable[[str, Settings], int | None]) -> int | None:
    """The window probe(model_spec) finds, stored in the cache; under --replay the stored one, never a probe.

    Replaying with the recorded window keeps the prompt budget (and so every prompt) as it was recorded;
    a window that was never recorded is None (the budget falls back on --context-budget or the default).
    """
    assert settings.cache_dir is not None
    store = open_store(settings.cache_dir)
    key = content_key(KIND, {"model": model_spec})
    entry = store.get_tool(key)
    stored = entry.meta.get("window") if entry is not None and entry.ok else None
    stored = stored if isinstance(stored, int) else None
    if settings.cache_replay:
        return stored
    window = probe(model_spec, settings)
    if window and window != stored:  # asked once per task: written only when it changes
        store.put_tool(key, KIND, {"model": model_spec}, True, {"window": window}, None)
    return window


def local_window(model_spec: str, settings: Settings) -> int | None:
    """llm.local_context_window: recorded in the cache under --cache, read back (never probed) under --replay."""
    if settings.cache_dir is None:
        return local_context_window(model_spec, settings)
    return recorded_window(model_spec, settings, local_context_window)
