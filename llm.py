"""The model interface the agent calls: messages in, a Completion out, typed errors."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol, TypedDict


class Message(TypedDict):
    """One chat message; adapters map these onto each provider's API."""

    role: Literal["system", "user", "assistant"]
    content: str


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


class ChatModel(Protocol):
    """Anything that can complete a list of messages (the facade, an adapter, a test fake)."""

    def complete(
        self,
        messages: list[Message],
        stop: list[str] | None = None,
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """Return the model's reply to the messages."""
        ...


class LLMError(Exception):
    """A model call failed after retries: the task fails, the batch goes on."""

    def __init__(self, message: str, *, model: str = "", status: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.model = model
        self.status = status
        self.attempts = attempts


class LLMFatalError(LLMError):
    """A failure every task would hit (rejected key, unknown model): the run stops."""


class EmptyCompletionError(LLMError):
    """The model returned nothing usable (empty text, safety block, refusal)."""
