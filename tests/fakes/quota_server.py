"""A loopback model server that holds a per-minute request quota the way the providers say they may hold it:
per second, answering 429 with their rate-limit headers.

OpenAI (https://platform.openai.com/docs/guides/rate-limits): "rate limits can be quantized, meaning they are
enforced over shorter periods of time (e.g. 60,000 requests/minute may be enforced as 1,000 requests/second)".
Rule "second": each one-second quantum admits quota/60 requests, counted afresh every quantum.
Anthropic (https://docs.anthropic.com/en/api/rate-limits): "We use the token bucket algorithm … your capacity is
continuously replenished up to your maximum limit", and "a rate of 60 requests per minute may be enforced as 1
request per second". Rule "bucket": a bucket of quota/60 requests refilled continuously at quota/60 a second.

Both also hold the minute's quota (a bucket of `quota` refilling at quota/60 a second), which is what their
headers report: OpenAI's x-ratelimit-{limit,remaining,reset}-requests (reset as a Go duration, "until the
limit is back to its initial state") and Anthropic's anthropic-ratelimit-requests-{limit,remaining,reset}
(reset as an RFC 3339 time). A 429 carries retry-after in whole seconds (and OpenAI's retry-after-ms): until
the next request would pass. `window` shortens the minute for a test or a scaled benchmark (the quantum shrinks
with it; retry-after is then fractional). Arrivals are recorded (seconds since the server started) for tests.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from tests.fakes.loopback import Request, Response
from tests.fakes.providers import (
    ANTHROPIC_PATHS,
    OPENAI_PATHS,
    anthropic_error,
    anthropic_reply,
    openai_error,
    openai_reply,
)

RULES = {"openai": "second", "anthropic": "bucket"}  # how each provider's documentation reads


@dataclass
class Arrival:
    """One request as the server saw it: when (monotonic seconds) and whether it passed."""

    at: float
    admitted: bool


def go_duration(seconds: float) -> str:
    """Seconds as OpenAI writes its resets ("12ms", "1.5s", "1m0s")."""
    if seconds < 1:
        return f"{max(round(seconds * 1000), 1)}ms"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s" if minutes else f"{rest:.3g}s"


@dataclass
class QuotaServer:
    """A handler for LoopbackServer: `provider`'s wire format, `quota` requests a minute held per second."""

    quota: int
    provider: str = "openai"
    window: float = 60.0
    answer: Callable[[Request], str] = lambda req: "Final Answer: 4"
    arrivals: list[Arrival] = field(default_factory=list)
    rule: str = ""  # "second" or "bucket"; the provider's (RULES) when not given

    def __post_init__(self) -> None:
        self.rule = self.rule or RULES[self.provider]
        self.rate = self.quota / self.window  # requests a second, for both buckets
        self.per_quantum = max(1, self.quota // 60)
        self.quantum = self.per_quantum / self.rate  # one second of the (scaled) minute, or longer under 60/min
        self.start = time.monotonic()
        self.counted: dict[int, int] = {}  # quantum number -> requests admitted in it
        self.second_level, self.minute_level, self.filled_at = float(self.per_quantum), float(self.quota), 0.0
        self._lock = threading.Lock()

    @property
    def refused(self) -> int:
        """The 429s answered."""
        return sum(not a.admitted for a in self.arrivals)

    def __call__(self, req: Request) -> Response:
        paths = OPENAI_PATHS if self.provider == "openai" else ANTHROPIC_PATHS
        if req.method != "POST" or not paths.fullmatch(req.path.split("?", 1)[0]):
            return Response(404, "not found")
        with self._lock:
            now = time.monotonic() - self.start
            wait = self._admit(now)
            self.arrivals.append(Arrival(now, wait == 0.0))
            headers = self._headers(now)
            text = self.answer(req) if wait == 0.0 else ""
        if wait > 0.0:
            return self._refusal(wait, headers)
        if self.provider == "openai":
            return Response(200, openai_reply(text, 300, 20, model="gpt-4.1-mini").body, headers=headers)
        return Response(200, anthropic_reply(text, 300, 20, model="claude-haiku-4-5").body, headers=headers)

    def _admit(self, now: float) -> float:
        """Take one request from every limit (0.0) or say how long until it would pass."""
        gained = (now - self.filled_at) * self.rate
        self.filled_at = now
        self.minute_level = min(float(self.quota), self.minute_level + gained)
        self.second_level = min(float(self.per_quantum), self.second_level + gained)
        quantum = int(now // self.quantum)
        if self.rule == "second":
            full = self.counted.get(quantum, 0) >= self.per_quantum
            second_wait = (quantum + 1) * self.quantum - now if full else 0.0
        else:
            second_wait = max(1.0 - self.second_level, 0.0) / self.rate
        wait = max(second_wait, max(1.0 - self.minute_level, 0.0) / self.rate)
        if wait > 0.0:
            return wait
        self.counted[quantum] = self.counted.get(quantum, 0) + 1
        self.minute_level -= 1.0
        self.second_level -= 1.0
        return 0.0

    def _headers(self, now: float) -> dict[str, str]:
        remaining = max(math.floor(self.minute_level), 0)
        refill = (self.quota - self.minute_level) / self.rate  # seconds until the minute's quota is whole again
        if self.provider == "openai":
            return {"x-ratelimit-limit-requests": str(self.quota), "x-ratelimit-remaining-requests": str(remaining),
                    "x-ratelimit-reset-requests": go_duration(refill)}
        reset = datetime.fromtimestamp(time.time() + refill, UTC).isoformat(timespec="milliseconds")
        return {"anthropic-ratelimit-requests-limit": str(self.quota),
                "anthropic-ratelimit-requests-remaining": str(remaining),
                "anthropic-ratelimit-requests-reset": reset.replace("+00:00", "Z")}

    def _refusal(self, wait: float, headers: dict[str, str]) -> Response:
        retry = str(math.ceil(wait)) if self.window == 60.0 else f"{wait:.3f}"  # whole seconds, as sent
        if self.provider == "openai":
            return openai_error(429, f"Rate limit reached for requests. Limit: {self.quota} / min.",
                                type_="requests", code="rate_limit_exceeded",
                                headers={**headers, "retry-after": retry,
                                         "retry-after-ms": str(math.ceil(wait * 1000))})
        return anthropic_error(429, "Number of requests has exceeded your per-minute rate limit",
                               type_="rate_limit_error", headers={**headers, "retry-after": retry})
