"""The even pace of a per-minute limit: a bucket refilled evenly that lets a second's allowance go at once.

Providers may hold a per-minute quota per second (Anthropic: 60 requests a minute "may be enforced as 1
request per second"; OpenAI: limits "can be quantized"), so providers/ratelimit.py's RateWindow paces each
limit it knows (--rpm, --tpm, or one the provider's headers state) with a `Pace`. Pure state: no clock, no lock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

PACE = 0.97  # the share of a limit sent: room for the network's jitter at a provider counting per second


@dataclass
class Bucket:
    """An allowance refilled evenly at `rate` a second up to `size` (--rpm, --tpm), kept as the time it is full
    again. A cost goes once the bucket holds it, or once it is full for a cost above its size: the debt then
    holds the next ones."""

    rate: float
    size: float
    full_at: float = -math.inf

    def wait(self, now: float, cost: float) -> float:
        """Seconds until `cost` may go."""
        return max(self.full_at - (self.size - min(cost, self.size)) / self.rate - now, 0.0)

    def take(self, now: float, cost: float) -> None:
        """Spend `cost` (into debt if need be)."""
        self.full_at = max(self.full_at, now) + cost / self.rate

    def empty_at(self, now: float) -> None:
        """Count the bucket spent at `now`: nothing more goes for a refill's time."""
        self.full_at = max(self.full_at, now + self.size / self.rate)

    def give_back(self, now: float, amount: float) -> None:
        """Return what a request did not use (a negative amount takes what it used beyond its estimate)."""
        self.full_at = max(self.full_at - amount / self.rate, now)


@dataclass
class Pace:
    """One per-minute limit paced evenly: its bucket (a second's allowance, refilled at PACE of the limit) and
    the reason a wait names. Set by --rpm / --tpm, or `learned` from a reply's headers."""

    kind: str  # requests, tokens, input-tokens, output-tokens: what a request counts against it (cost())
    limit: int
    bucket: Bucket
    reason: str
    learned: bool = False

    @classmethod
    def of(cls, kind: str, limit: int, window: float, reason: str = "", full_at: float = -math.inf) -> Pace:
        """A pace of `limit` a window; without a reason, one learned from the provider's headers."""
        words = f"the provider's {limit:,} {kind.replace('-', ' ')} a minute"
        size = 1.0 if kind == "requests" else max(limit / 60, 1.0)
        return cls(kind, limit, Bucket(limit * PACE / window, size, full_at), reason or words, not reason)

    def cost(self, prompt: float, reply: float) -> float:
        """What a request of `prompt` tokens and `reply` tokens counts against this limit."""
        return {"requests": 1.0, "tokens": prompt + reply, "input-tokens": prompt}.get(self.kind, reply)

    def grant_cost(self, prompt: float, reply: float) -> float:
        """What it counts as it goes: --tpm holds the reply's max_tokens until the reply comes; a learned token
        limit counts the prompt, the reply once it comes (holding every request's max_tokens against a
        second's allowance would keep a batch far below what a provider lets through)."""
        return self.cost(prompt, 0.0 if self.learned else reply)
