"""The chat types every layer shares: a Message in, a Completion out, and the ChatModel protocol."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, NotRequired, Protocol, TypedDict

from core.images import Image


@dataclass(frozen=True)
class FileRef:
    """A file the provider reads by URI (a Gemini File API upload, a YouTube URL): only Gemini takes these."""

    uri: str
    mime: str = ""  # empty for a YouTube URL
    digest: str = ""  # sha256 of an uploaded file: caches key on it, not on the URI each upload gets anew
    seconds: float = 0.0  # the part of the video sent (from its start): bounds what the provider reads and bills


class Message(TypedDict):
    """One chat message; adapters map these onto each provider's API."""

    role: Literal["system", "user", "assistant"]
    content: str
    images: NotRequired[list[Image]]  # user turns only: sent in each provider's native image form
    files: NotRequired[list[FileRef]]  # user turns only, Gemini only: videos by URI (the watch tool)


@dataclass(frozen=True)
class Completion:
    """One model reply with its usage; cost is None when the model's price is unknown."""

    text: str
    finish_reason: str | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0
    model: str = ""
    latency: float = 0.0
    cost: float | None = None
    cached: bool = False  # answered from the --cache/--replay store: cost is this run's ($0) ...
    original_cost: float | None = None  # ... and this is what the recorded call cost
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache (cheaper)
    cache_write_tokens: int = 0  # of prompt_tokens, written to the prompt cache (Anthropic: dearer)
    billed_before: tuple[Completion, ...] = ()  # replies of this call that were billed but failed (empty)
    rate_headers: tuple[tuple[str, str], ...] = ()  # the reply's rate-limit headers (providers/ratelimit.py)
    rate_wait: float = 0.0  # seconds this call waited for a shared rate limit (--rpm, --tpm, a 429's pause)


class ChatModel(Protocol):
    """Anything that can complete a list of messages (the facade, an adapter, a wrapper, a test fake)."""

    def complete(
        self,
        messages: list[Message],
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """Return the model's reply to the messages."""
        ...


# The providers a "provider:model" string may name: the four APIs with their own adapter or server, Azure OpenAI,
# OpenRouter and the hosted OpenAI-compatible APIs of providers/hosts.py (a test holds the two lists together);
# inspect: the model of the Inspect eval the agent runs in (providers/inspect_model.py, only inside one).
PROVIDERS = ("openai", "anthropic", "gemini", "ollama", "azure", "openrouter", "groq", "deepseek", "mistral",
             "together", "fireworks", "xai", "inspect")


def split_spec(spec: str) -> tuple[str, str]:
    """The one reading of a "provider:model" string: ("openai", "gpt-4.1-mini") for "openai:gpt-4.1-mini";
    ("", spec) when it names no known provider ("qwen2.5:14b"). The model may hold ':' ("ollama:qwen2.5:14b")."""
    provider, sep, model = spec.strip().partition(":")
    if sep and provider.strip().lower() in PROVIDERS:
        return provider.strip().lower(), model.strip()
    return "", spec.strip()
