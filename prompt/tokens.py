"""The offline token count every prompt budget is kept with: about chars/4 plus a per-message overhead, calibrated
per model from the provider's reported counts."""

from __future__ import annotations

import math

from core.chat import Message


class TokenEstimator:
    """An offline token count: about chars/4 plus a per-message overhead, calibrated per model."""

    CHARS_PER_TOKEN = 4.0
    PER_MESSAGE = 4  # role markers and separators most chat formats add around each message
    PRIMING = 3  # the tokens that open the reply
    MIN_RATIO, MAX_RATIO = 0.75, 4.0  # reported/estimated outside this range is a bad report, not a tokenizer
    SMOOTHING = 0.5  # weight of the newest report in the running ratio

    def __init__(self) -> None:
        self.ratios: dict[str, float] = {}

    def ratio(self, model: str | None = None) -> float:
        """reported/estimated for this model; the largest known (the safe side) when it has no reports."""
        if model is not None and model in self.ratios:
            return self.ratios[model]
        return max(self.ratios.values(), default=1.0)

    def raw(self, chars: int, messages: int) -> float:
        """The uncalibrated estimate for this many characters spread over this many messages."""
        return chars / self.CHARS_PER_TOKEN + messages * self.PER_MESSAGE + (self.PRIMING if messages else 0)

    def count(self, chars: int, messages: int, model: str | None = None) -> int:
        """The calibrated estimate for this many characters in this many messages."""
        return math.ceil(self.raw(chars, messages) * self.ratio(model))

    def tokens(self, messages: list[Message], model: str | None = None) -> int:
        """Estimated prompt tokens of these messages."""
        return self.count(sum(len(m["content"]) for m in messages), len(messages), model)

    def text_tokens(self, text: str, model: str | None = None) -> int:
        """Estimated tokens of a piece of text inside a message."""
        return self.count(len(text), 0, model)

    def chars_for(self, tokens: float, model: str | None = None) -> int:
        """How many characters fit in this many tokens."""
        return max(int(tokens * self.CHARS_PER_TOKEN / self.ratio(model)), 0)

    def calibrate(self, messages: list[Message], reported: int, model: str = "") -> None:
        """Move this model's ratio toward reported/estimated (reports of 0 mean 'unknown' and are ignored)."""
        self.calibrate_size(sum(len(m["content"]) for m in messages), len(messages), reported, model)

    def calibrate_size(self, chars: int, messages: int, reported: int, model: str = "") -> None:
        """calibrate() for a prompt whose size is already known: `chars` characters in `messages` messages."""
        estimated = self.raw(chars, messages)
        if reported <= 0 or estimated <= 0:
            return
        observed = min(max(reported / estimated, self.MIN_RATIO), self.MAX_RATIO)
        old = self.ratios.get(model)
        self.ratios[model] = observed if old is None else old + self.SMOOTHING * (observed - old)
