"""What providers' rate-limit response headers say: requests and tokens left, and when they come back.

OpenAI (https://platform.openai.com/docs/guides/rate-limits): x-ratelimit-{limit,remaining,reset}-{requests,tokens},
the resets as Go durations ("1s", "6m0s", "12ms"). Anthropic (https://docs.anthropic.com/en/api/rate-limits):
anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}, the resets as RFC 3339
times. Both send retry-after (seconds) with a 429; OpenAI also retry-after-ms.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from providers.common import parse_retry_after

# Only these headers are kept on a Completion (providers/ratelimit.py reads them): nothing else of a reply's.
RATE_HEADER = re.compile(r"^(x-ratelimit-|anthropic-ratelimit-|retry-after)", re.IGNORECASE)
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


@dataclass(frozen=True)
class Allowance:
    """What a header set says of one kind (requests or tokens): how many are left, seconds until refilled, and
    the limit when sent. Both providers refill continuously (a token bucket), so between the two the allowance
    grows at about (limit - remaining) / reset_in a second."""

    remaining: int
    reset_in: float
    limit: int | None = None

    def refill_rate(self) -> float | None:
        """Requests or tokens a second coming back, when the limit and the reset are known."""
        if self.limit is None or self.reset_in <= 0 or self.limit <= self.remaining:
            return None
        return (self.limit - self.remaining) / self.reset_in


@dataclass(frozen=True)
class RateHeaders:
    """A reply's rate-limit headers read: requests, tokens (the scarcest kind sent), Anthropic's input and
    output tokens apart, and retry-after."""

    requests: Allowance | None = None
    tokens: Allowance | None = None
    retry_after: float | None = None
    input_tokens: Allowance | None = None
    output_tokens: Allowance | None = None

    def limits(self) -> dict[str, int]:
        """The per-minute limits stated, by what they count: "requests", "tokens" (prompt and reply), or
        Anthropic's "input-tokens" and "output-tokens" (its combined tokens-* only when neither is sent)."""
        apart = {"input-tokens": self.input_tokens, "output-tokens": self.output_tokens}
        sent: dict[str, Allowance | None] = {k: a for k, a in apart.items() if a is not None}
        kinds = {"requests": self.requests, **(sent or {"tokens": self.tokens})}
        return {kind: a.limit for kind, a in kinds.items() if a is not None and a.limit}


def rate_headers(headers: Mapping[str, str] | None) -> tuple[tuple[str, str], ...]:
    """The rate-limit headers of a response, lower-cased, as pairs a frozen Completion can hold."""
    if not headers:
        return ()
    return tuple((k.lower(), str(v)) for k, v in headers.items() if RATE_HEADER.match(k))


def parsed(raw: Any) -> tuple[Any, tuple[tuple[str, str], ...]]:
    """A raw SDK response (`with_raw_response`) as its parsed body and its rate-limit headers."""
    return raw.parse(), rate_headers(raw.headers)


def parse_duration(value: str) -> float | None:
    """Seconds of an OpenAI reset value ("1s", "6m0s", "20ms", "1h2m3.5s", or a bare number); None if unreadable."""
    text = value.strip()
    try:
        return max(float(text), 0.0)
    except ValueError:
        pass
    parts = _DURATION.findall(text)
    if not parts or "".join(n + u for n, u in parts) != text:
        return None
    return sum(float(n) * _UNIT[u] for n, u in parts)


def _reset_seconds(value: str, now: float) -> float | None:
    seconds = parse_duration(value)
    if seconds is not None:
        return seconds
    try:  # Anthropic: an RFC 3339 time ("2026-11-25T18:01:00Z")
        when = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return max(when.timestamp() - now, 0.0)


def _number(h: Mapping[str, str], name: str) -> int | None:
    try:
        return int(float(h[name]))
    except (KeyError, ValueError):
        return None


def _allowance(h: Mapping[str, str], remaining: str, reset: str, limit: str, now: float) -> Allowance | None:
    left = _number(h, remaining)
    if left is None:
        return None
    return Allowance(max(left, 0), _reset_seconds(h.get(reset, ""), now) or 0.0, _number(h, limit))


def _anthropic(h: Mapping[str, str], kind: str, now: float) -> Allowance | None:
    name = f"anthropic-ratelimit-{kind}"
    return _allowance(h, f"{name}-remaining", f"{name}-reset", f"{name}-limit", now)


def _openai(h: Mapping[str, str], kind: str, now: float) -> Allowance | None:
    return _allowance(h, f"x-ratelimit-remaining-{kind}", f"x-ratelimit-reset-{kind}", f"x-ratelimit-limit-{kind}", now)


def read_rate_headers(headers: Mapping[str, str] | None, now: float) -> RateHeaders:
    """The allowances a response's headers state (OpenAI's or Anthropic's names), at wall-clock time `now`."""
    h = {k.lower(): v for k, v in (headers or {}).items()}
    requests = _openai(h, "requests", now) or _anthropic(h, "requests", now)
    # Anthropic's tokens-* are "the most restrictive limit currently in effect"; input and output otherwise.
    tokens = _openai(h, "tokens", now) or _anthropic(h, "tokens", now)
    inputs, outputs = _anthropic(h, "input-tokens", now), _anthropic(h, "output-tokens", now)
    if tokens is None:
        known = [t for t in (inputs, outputs) if t]
        tokens = min(known, key=lambda t: t.remaining) if known else None
    return RateHeaders(requests, tokens, parse_retry_after(h, now), inputs, outputs)
