"""Shared rate limits: one limiter per provider for all of a run's tasks, so a wide batch slows before 429s.

A `Limiter` paces requests and tokens evenly at --rpm / --tpm, or else at the per-minute limits the
provider's rate-limit headers state (providers/pacing.py), learns what the headers say is left
(providers/rate_headers.py), and after a 429 pauses every task on that provider until the advised time.
`RateLimitedBackend` wraps one provider's Backend with its limiter (a wrapper, like budget.BudgetedModel, not a
subclass); `RateLimits` is the run's set of limiters.

The Limiter protocol is small so that another process-wide implementation (a Ray actor holding a
`RateWindow`) can stand in through `RateLimits(factory=...)`; `RateWindow` is the pure state, without
locks, clocks or sleeping, and `wait_turns` the loop a client runs around it.
"""

from __future__ import annotations

import contextvars
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

from core import cancellation
from core.chat import Completion, split_spec
from providers.budget import estimate_prompt_tokens
from providers.common import Backend, ChatRequest, TransientError
from providers.pacing import Pace
from providers.rate_headers import read_rate_headers

WINDOW = 60.0  # seconds of a "per minute" limit (the benchmark shortens it, and says so)
MAX_NAP = 1.0  # a waiting call looks again at least this often (a pause may end early, Ctrl-C)
DEFAULT_PAUSE = 2.0  # after a 429 that names no wait
FIRST_REPLY_LOOK = 0.1  # callers held for the first request's reply look again this often (or each --rpm interval)
_WHO: contextvars.ContextVar[str] = contextvars.ContextVar("ratelimit_who", default="")


@dataclass(frozen=True)
class LimiterStatus:
    """Where one limiter stands, for the progress line: who waits, until when (wall clock), and why."""

    name: str
    waiting: tuple[str, ...] = ()
    until: float | None = None
    reason: str = ""


class Limiter(Protocol):
    """One provider's shared limit; implementations are thread-safe (and may live in another process)."""

    name: str

    def acquire(self, prompt_tokens: int, reply_tokens: int = 0) -> float:
        """Block until a request of about `prompt_tokens` asking for up to `reply_tokens` more may be sent;
        the seconds waited."""
        ...

    def observe(self, headers: Mapping[str, str], prompt_tokens: int, reply_tokens: int = 0) -> None:
        """Learn from a reply: its rate-limit headers and the tokens the request really used (0, 0: unknown)."""
        ...

    def pause_until(self, t: float, reason: str = "") -> None:
        """No request before wall-clock time `t` (a 429's retry-after), for every caller."""
        ...

    def status(self) -> LimiterStatus:
        """Who is waiting, until when."""
        ...


LimiterFactory = Callable[[str, int | None, int | None, bool], Limiter]  # (name, rpm, tpm, limited) -> a limiter


@contextmanager
def waiting_as(label: str) -> Iterator[None]:
    """Name the calls inside (a task's id) in the limiters' status while they wait."""
    token = _WHO.set(label)
    try:
        yield
    finally:
        _WHO.reset(token)


@dataclass
class Grant:
    """A request let through: when, its tokens (estimated until its reply says), what each pace took."""

    at: float
    tokens: float
    taken: dict[str, float]
    settled: bool = False


class RateWindow:
    """A limiter's state: paces (evenly refilled buckets), what the headers said is left, a pause. No locks.

    Providers may hold a per-minute quota per second (Anthropic: 60 requests a minute "may be enforced as 1
    request per second"; OpenAI: limits "can be quantized"), so a requests limit sends one request at a time,
    each 60/limit s after the previous one, and a tokens limit lets a second's worth (limit/60) go at once.
    The limits are --rpm / --tpm where given, else those the provider's headers state (not `limited`: a search
    backend's limiter, which paces nothing). The first request goes alone until its reply is in (at most a window):
    it brings the headers, a client's first call spends a while setting up before it is sent, and the calls
    granted after it must not reach the server with it."""

    def __init__(self, rpm: int | None, tpm: int | None, window: float | None = None,
                 limited: bool = True) -> None:
        self.rpm, self.tpm, self.limited = rpm, tpm, limited
        self.window = WINDOW if window is None else window
        self.paces: dict[str, Pace] = {}
        if rpm is not None:
            self.paces["requests"] = Pace.of("requests", rpm, self.window, f"--rpm {rpm}")
        if tpm is not None:
            self.paces["tokens"] = Pace.of("tokens", tpm, self.window, f"--tpm {tpm:,}")
        self.grants: deque[Grant] = deque()  # oldest first
        self.first_sent: float | None = None  # when the first request went
        self.replied = False  # a reply (or a failure) is in
        self.paused_until, self.pause_reason = 0.0, ""
        # kind -> (remaining, reset_at, observed_at, refill per second or 0 when unknown)
        self.learned: dict[str, tuple[int, float, float, float]] = {}

    def try_acquire(self, now: float, prompt: int, reply: int = 0) -> tuple[float, str]:
        """Grant a request now (0.0, "") or say how long to wait and why."""
        self._forget(now)
        wait, reason = self.wait_for(now, prompt, reply)
        if wait <= 0:
            taken = {kind: pace.grant_cost(prompt, reply) for kind, pace in self.paces.items()}
            self.grants.append(Grant(now, float(prompt + reply), taken))
            self.first_sent = now if self.first_sent is None else self.first_sent
            for kind, pace in self.paces.items():
                pace.bucket.take(now, taken[kind])
        return wait, reason

    def wait_for(self, now: float, prompt: int, reply: int = 0) -> tuple[float, str]:
        """Seconds until a request fits every limit, with the limit that holds it."""
        waits = [(self.paused_until - now, self.pause_reason or "paused after a 429")]
        waits += [(p.bucket.wait(now, p.grant_cost(prompt, reply)), p.reason) for p in self.paces.values()]
        if (self.limited or self.paces) and self.first_sent is not None and not self.replied:
            ask_again = min(self.first_sent + self.window, now + max(self.spacing(), FIRST_REPLY_LOOK))
            waits.append((ask_again - now, "the first request's reply"))
        for kind, learned in self.learned.items():
            waits.append(self._learned_wait(kind, learned, now, prompt + reply))
        return max(waits, key=lambda w: w[0])

    def spacing(self) -> float:
        """Seconds between two requests under a requests limit (0 without one)."""
        pace = self.paces.get("requests")
        return 1.0 / pace.bucket.rate if pace is not None else 0.0

    def _learned_wait(self, kind: str, learned: tuple[int, float, float, float], now: float,
                      est: int) -> tuple[float, str]:
        """How long until the provider's allowance covers the request: refilled at its rate (each grant since
        the headers came takes its share, so waiting callers go one after another), at the latest its reset."""
        remaining, reset_at, observed, rate = learned
        since = [g for g in self.grants if g.at > observed]
        used = len(since) if kind == "requests" else sum(g.tokens for g in since)
        need = 1 if kind == "requests" else min(est, remaining + rate * (reset_at - observed)) or 1
        have = remaining - used + rate * (now - observed)
        if have >= need or now >= reset_at:
            return 0.0, ""
        wait = min((need - have) / rate, reset_at - now) if rate else reset_at - now
        return wait, f"the provider said {remaining:,} {kind} were left"

    def _forget(self, now: float) -> None:
        oldest_use = min([now - self.window, *(learned[2] for learned in self.learned.values())])
        while self.grants and self.grants[0].at < oldest_use:
            self.grants.popleft()
        self.learned = {k: v for k, v in self.learned.items() if v[1] > now}

    def observe(self, now: float, headers: Mapping[str, str], prompt: int, reply: int = 0) -> None:
        """Learn the limits and what is left from the headers; settle the oldest unsettled grant at the tokens
        really used (none known, 0 and 0: what it took stays taken)."""
        if not self.replied and "requests" in self.paces and not self.paces["requests"].learned:
            self.paces["requests"].bucket.empty_at(now)  # the first went out at the latest now: the next waits
        self.replied = True
        read = read_rate_headers(headers, now)
        for kind, limit in read.limits().items():
            self._learn_pace(kind, limit)
        grant = next((g for g in self.grants if not g.settled), None)
        if grant is not None:
            grant.settled = True
            if prompt or reply:
                grant.tokens = float(prompt + reply)
                for kind, pace in self.paces.items():
                    if kind in grant.taken:
                        pace.bucket.give_back(now, grant.taken[kind] - pace.cost(prompt, reply))
                    else:  # a limit learned while it was out
                        pace.bucket.take(now, pace.cost(prompt, reply))
        for kind, allowance in (("requests", read.requests), ("tokens", read.tokens)):
            if allowance is not None:
                rate = allowance.refill_rate() or 0.0
                self.learned[kind] = (allowance.remaining, now + allowance.reset_in, now, rate)

    def _learn_pace(self, kind: str, limit: int) -> None:
        """Pace at a limit the provider stated, unless --rpm (requests) or --tpm (tokens) sets it; a new value
        (another model's limit) keeps what the old one still owes."""
        explicit = self.rpm if kind == "requests" else self.tpm
        old = self.paces.get(kind)
        if not self.limited or explicit is not None or (old is not None and old.limit == limit):
            return
        self.paces[kind] = Pace.of(kind, limit, self.window, full_at=old.bucket.full_at if old else -math.inf)

    def pause_until(self, t: float, reason: str = "") -> None:
        """Hold every request until `t` (a later pause wins)."""
        if t > self.paused_until:
            self.paused_until, self.pause_reason = t, reason


def wait_turns(try_acquire: Callable[[float], tuple[float, str]], clock: Callable[[], float],
               sleep: Callable[[float], None], on_wait: Callable[[float | None, str], None] | None = None) -> float:
    """Ask `try_acquire` (at a time) until it grants, napping between asks; the seconds waited (Ctrl-C and
    deadlines end it)."""
    start, asked = clock(), 0
    nap = cancellation.waiter(sleep)
    try:
        while True:
            cancellation.check()
            now = clock()
            wait, reason = try_acquire(now)
            asked += 1
            if wait <= 0:
                return clock() - start if asked > 1 else 0.0  # granted at the first ask: no wait at all
            if on_wait is not None:
                on_wait(now + wait, reason)
            nap(min(wait, MAX_NAP))
    finally:
        if on_wait is not None:
            on_wait(None, "")


class LocalLimiter:
    """A Limiter for the threads of one process: a RateWindow behind a lock."""

    def __init__(self, name: str, rpm: int | None = None, tpm: int | None = None, *, limited: bool = True,
                 window: float | None = None, clock: Callable[[], float] = time.time,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.name = name
        self.state = RateWindow(rpm, tpm, window, limited)
        self._lock = threading.Lock()
        self._clock, self._sleep = clock, sleep
        self._waiting: dict[int, tuple[str, float, str]] = {}  # thread -> (who, until, why)

    def acquire(self, prompt_tokens: int, reply_tokens: int = 0) -> float:
        """Block until the request may go; the seconds waited."""
        return wait_turns(lambda now: self._try(now, prompt_tokens, reply_tokens), self._clock, self._sleep,
                          self._note_wait)

    def _try(self, now: float, prompt_tokens: int, reply_tokens: int) -> tuple[float, str]:
        with self._lock:
            return self.state.try_acquire(now, prompt_tokens, reply_tokens)

    def _note_wait(self, until: float | None, reason: str) -> None:
        me = threading.get_ident()
        with self._lock:
            if until is None:
                self._waiting.pop(me, None)
            else:
                self._waiting[me] = (_WHO.get() or threading.current_thread().name, until, reason)

    def observe(self, headers: Mapping[str, str], prompt_tokens: int, reply_tokens: int = 0) -> None:
        """Learn from a reply's headers and settle its tokens."""
        with self._lock:
            self.state.observe(self._clock(), headers, prompt_tokens, reply_tokens)

    def pause_until(self, t: float, reason: str = "") -> None:
        """Hold every caller until wall-clock time `t`."""
        with self._lock:
            self.state.pause_until(t, reason)

    def status(self) -> LimiterStatus:
        """Who waits, until when (the last of them, one --rpm interval after another), and why."""
        with self._lock:
            waits, spacing = list(self._waiting.values()), self.state.spacing()
        if not waits:
            return LimiterStatus(self.name)
        until, reason = max((u, r) for _, u, r in waits)
        return LimiterStatus(self.name, tuple(sorted(w for w, _, _ in waits)), until + (len(waits) - 1) * spacing,
                             reason)


def provider_of(spec: str) -> str:
    """The limiter name of a model spec: its provider ("openai:gpt-4.1-mini" -> "openai")."""
    return split_spec(spec)[0] or spec


class RateLimits:
    """The run's limiters by name (a provider, a search backend), made on first use, shared by all tasks."""

    def __init__(self, rpm: int | None = None, tpm: int | None = None, factory: LimiterFactory | None = None,
                 clock: Callable[[], float] = time.time) -> None:
        self.rpm, self.tpm, self.clock = rpm, tpm, clock  # the wall clock the limiters' times are on
        self._factory: LimiterFactory = factory or (lambda name, rpm, tpm, limited: LocalLimiter(name, rpm, tpm,
                                                                                              limited=limited))
        self._limiters: dict[str, Limiter] = {}
        self._lock = threading.Lock()

    def limiter(self, name: str, *, limited: bool = True) -> Limiter:
        """The limiter called `name`; `limited=False` (a search backend): 429 pauses only."""
        with self._lock:
            if name not in self._limiters:
                self._limiters[name] = self._factory(name, self.rpm if limited else None,
                                                     self.tpm if limited else None, limited)
            return self._limiters[name]

    def wrap(self, backend: Backend) -> Backend:
        """The backend with its provider's limiter around every request. A server the user runs (Ollama, a
        local OpenAI-compatible one) states no limits in headers: its limiter paces only by --rpm / --tpm, so
        without them no request waits for the first one's reply (a 429 still pauses them all)."""
        if getattr(backend, "local", False):
            limiter = self.limiter(f"{provider_of(backend.spec)} (local server)", limited=bool(self.rpm or self.tpm))
        else:
            limiter = self.limiter(provider_of(backend.spec))
        return RateLimitedBackend(backend, limiter, self.clock)

    def status(self) -> list[LimiterStatus]:
        """The limiters somebody is waiting for."""
        with self._lock:
            limiters = list(self._limiters.values())
        return [s for s in (lim.status() for lim in limiters) if s.waiting]

    def note(self) -> str:
        """Who waits for which limit, for the progress line ("" when nobody does)."""
        now = self.clock()
        return "; ".join(f"{len(s.waiting)} task(s) waiting {max((s.until or now) - now, 0.0):.0f} s for {s.name}"
                         f" ({s.reason})" for s in self.status())


class RateLimitedBackend:
    """A Backend whose requests first take a turn from the provider's shared limiter."""

    def __init__(self, inner: Backend, limiter: Limiter, clock: Callable[[], float] = time.time) -> None:
        self.inner, self.limiter, self._clock = inner, limiter, clock
        self.spec, self.model = inner.spec, inner.model
        self._carried = threading.local()  # this thread's 429 pauses, shown with its next reply

    def complete(self, request: ChatRequest) -> Completion:
        """The inner backend's reply once the limiter lets the request go; a 429 pauses every caller."""
        waited = self.limiter.acquire(estimate_prompt_tokens(request.messages), request.max_tokens)
        try:
            reply = self.inner.complete(request)
        except TransientError as exc:
            self._learn_from_failure(exc)
            raise
        except Exception:
            self.limiter.observe({}, 0)  # settled: the request's estimate stays spent
            raise
        self.limiter.observe(dict(reply.rate_headers), reply.prompt_tokens, reply.completion_tokens)
        carried, self._carried.seconds = getattr(self._carried, "seconds", 0.0), 0.0
        return replace(reply, rate_wait=reply.rate_wait + waited + carried)

    def _learn_from_failure(self, exc: TransientError) -> None:
        headers = dict(exc.headers or {})
        self.limiter.observe(headers, 0)
        if exc.status != 429:
            return
        if exc.retry_after is None:
            exc.retry_after = DEFAULT_PAUSE  # every task waits the same, instead of each its own backoff
        self.limiter.pause_until(self._clock() + exc.retry_after, f"{self.spec} answered 429")
        self._carried.seconds = getattr(self._carried, "seconds", 0.0) + exc.retry_after

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)
