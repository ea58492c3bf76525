"""Model calls through the cache: a hit makes no request; under --replay a miss fails the call."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import llm
from cache.store import CacheStore, content_key, open_store
from config import Settings
from core.chat import ChatModel, Completion, Message
from core.errors import CacheMissError
from providers.hosts import AZURE_KEY, HOSTS

NO_KEY = "replay-sends-no-request"
STORED_FIELDS = ("text", "finish_reason", "prompt_tokens", "completion_tokens", "model", "cost")


def model_specs(model: Any) -> list[str]:
    """The provider:model specs a model answers with, the primary first (a wrapper's or a fake's own name)."""
    backends = getattr(model, "backends", None)
    return [b.spec for b in backends] if backends else [str(getattr(model, "model", ""))]


def replay_settings(settings: Settings) -> Settings:
    """Under --replay a missing API key is no error (no request is ever sent): a placeholder stands in."""
    if not settings.cache_replay:
        return settings
    variables = [h.key_env for h in HOSTS.values()] + [AZURE_KEY] + [a.api_key_env for a in settings.model_aliases
                                                                     if a.api_key_env]
    keys = {v: NO_KEY for v in variables} | dict(settings.provider_keys or ())  # the hosted APIs' and aliases' too
    return settings.with_overrides(provider_keys=tuple(sorted(keys.items())),
                                   **{f"{p}_api_key": getattr(settings, f"{p}_api_key") or NO_KEY
                                      for p in ("openai", "anthropic", "gemini")})


def build_model(settings: Settings, **kwargs: Any) -> ChatModel:
    """The run's model (llm.build_llm) answering from the cache first when --cache / --replay is set."""
    model = llm.build_llm(replay_settings(settings), **kwargs)  # looked up at call time: tests stand in for it
    return CachedModel(model, settings) if settings.cache_dir else model


def build_models(settings: Settings, **kwargs: Any) -> tuple[ChatModel, ChatModel | None]:
    """The run's model and its summary model (None: the run's model summarises), both built by build_model."""
    model = build_model(settings, **kwargs)
    summary = build_model(dataclasses.replace(settings, model=settings.summary_model, fallback_models=()),
                          **kwargs) if settings.summary_model else None  # built like the main model: cached too
    return model, summary


def model_for(spec: str, settings: Settings) -> ChatModel:
    """One provider:model (a tool's own model) built like the run's: through the cache when it is set."""
    model = llm.LLMInterface.from_spec(spec, replay_settings(settings))
    return CachedModel(model, settings) if settings.cache_dir else model


def request_payload(models: list[str], messages: list[Message], stop: list[str] | None, max_tokens: int,
                    temperature: float | None) -> dict[str, Any]:
    """Everything that changes a completion: the models, the exact messages and the sampling parameters."""
    return {"models": models, "messages": [_plain(m) for m in messages], "stop": list(stop or ()),
            "max_tokens": max_tokens, "temperature": temperature}


def _plain(message: Message) -> dict[str, Any]:
    """A message as JSON: its images (look) by MIME type and content hash, not their bytes."""
    out: dict[str, Any] = dict(message)
    if "images" in out:
        out["images"] = [{"mime": i.mime, "sha256": hashlib.sha256(i.data).hexdigest()} for i in out["images"]]
    if "files" in out:  # an upload by its content (each upload gets a new URI), a YouTube URL by itself
        out["files"] = [{"mime": f.mime, "sha256": f.digest or f.uri, "seconds": f.seconds} for f in out["files"]]
    return out


def thread_id(models: list[str], messages: list[Message]) -> str:
    """A hash of the models and the first user message (the task): groups a task's calls to explain misses."""
    task = next((m["content"] for m in messages if m["role"] == "user"), "")
    head = json.dumps([models, task], ensure_ascii=False)
    return hashlib.sha256(head.encode("utf-8")).hexdigest()[:32]


class CachedModel:
    """A model wrapped so that it answers from DIR/cache.sqlite3 first and records every new completion there.

    The facade it wraps knows nothing of the cache; every other attribute (model, backends, ...) is the
    wrapped model's.
    """

    def __init__(self, inner: ChatModel, settings: Settings) -> None:
        self.inner, self.settings = inner, settings
        self.models = model_specs(inner)

    @property
    def store(self) -> CacheStore:
        """The run's cache file."""
        assert self.settings.cache_dir is not None
        return open_store(self.settings.cache_dir)

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The recorded completion of exactly this request, else (unless replaying) a new one, recorded."""
        models = self.models
        payload = request_payload(models, messages, stop, max_tokens or self.settings.max_tokens,
                                  self.settings.temperature if temperature is None else temperature)
        key = content_key("llm", payload)
        stored = self.store.get_completion(key)
        if stored is not None:
            return as_cached(stored)
        if self.settings.cache_replay:
            raise CacheMissError(self._miss_message(models, messages, key), key)
        completion = self.inner.complete(messages, stop, max_tokens, temperature)
        record = {k: getattr(completion, k) for k in STORED_FIELDS}
        self.store.put_completion(key, models[0], thread_id(models, messages), record, payload)
        return completion

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (a copy being built): no endless lookup
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _miss_message(self, models: list[str], messages: list[Message], key: str) -> str:
        where = nearest_difference(self.store.requests_in_thread(thread_id(models, messages)), messages)
        return (f"replay: no recorded completion for this call to {models[0]} ({len(messages)} messages, key "
                f"{key[:12]}); {where}; the call was not made (--replay never calls a model)")


def nearest_difference(recorded: list[dict[str, Any]], messages: list[Message]) -> str:
    """Where these messages first differ from the closest recorded request of the same conversation."""
    if not recorded:
        return "no call with this task and model was recorded"
    best, at = None, -1
    for request in recorded:
        old = request.get("messages", [])
        same = next((i for i, (a, b) in enumerate(zip(old, messages, strict=False)) if a != dict(b)),
                    min(len(old), len(messages)))
        if same > at:
            best, at = old, same
    assert best is not None
    if at >= len(messages) or at >= len(best):
        return (f"the closest recorded call has {len(best)} messages where this one has {len(messages)}"
                " (the other parameters may differ)")
    return f"message {at + 1} ({messages[at]['role']}) differs from the closest recorded call: " + _first_change(
        best[at].get("content", ""), messages[at]["content"])


def _first_change(old: str, new: str) -> str:
    i = next((n for n, (a, b) in enumerate(zip(old, new, strict=False)) if a != b), min(len(old), len(new)))
    return f"recorded {old[max(i - 20, 0):i + 40]!r}, now {new[max(i - 20, 0):i + 40]!r} (character {i})"


def as_cached(stored: dict[str, Any]) -> Completion:
    """A stored completion as this run sees it: cached, $0 now, its original cost kept aside."""
    fields = {k: stored[k] for k in STORED_FIELDS if k in stored}
    original = fields.pop("cost", None)
    return dataclasses.replace(Completion(**fields), cost=0.0, cached=True, original_cost=original)
