"""A scripted chat model: replies come from a queue, every call is recorded."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

from core.chat import Completion, Message


@dataclass
class Call:
    """One call the agent made: the messages and options it sent."""

    messages: list[Message]
    stop: list[str] | None
    max_tokens: int | None
    temperature: float | None


Reply = str | Completion | Exception | Callable[[list[Message]], "str | Completion"]


@dataclass
class ScriptedLLM:
    """Answers each complete() with the next scripted reply; raises the reply if it is an exception."""

    replies: list[Reply]
    model: str = "scripted-model"
    prompt_tokens: int = 10
    completion_tokens: int = 5
    cost_per_call: float | None = None
    calls: list[Call] = field(default_factory=list)

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """Pop the next reply (the last one repeats when the queue runs out)."""
        self.calls.append(Call(copy.deepcopy(messages), stop, max_tokens, temperature))
        if not self.replies:
            raise AssertionError("ScriptedLLM ran out of replies")
        reply = self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]
        if isinstance(reply, Exception):
            raise reply
        if callable(reply):
            reply = reply(messages)
        if isinstance(reply, Completion):
            return reply
        return Completion(text=reply, finish_reason="stop", prompt_tokens=self.prompt_tokens,
                          completion_tokens=self.completion_tokens, model=self.model,
                          latency=0.0, cost=self.cost_per_call)
