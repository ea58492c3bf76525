"""Shared rate limits: --rpm/--tpm, or else the limits the providers' rate-limit headers state (through the real
SDKs), pace requests evenly across tasks (a server holding its quota per second sees no 429), what the headers
say is left slows the next requests down, a 429 pauses every caller, and the waits show in the status and the
completion.

Header names and value formats are the providers' own: OpenAI's from a reply of api.openai.com quoted at
https://community.openai.com/t/how-to-get-rate-limit-reset-time-for-response-api/1268905 (x-ratelimit-reset-*
as "12ms", "6m0s"; https://platform.openai.com/docs/guides/rate-limits), Anthropic's from
https://docs.anthropic.com/en/api/rate-limits (anthropic-ratelimit-*-reset as RFC 3339 times, retry-after in
seconds on a 429; see also anthropics/anthropic-sdk-typescript#357).
"""

from __future__ import annotations

import contextlib
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from config import Settings
from core import cancellation
from core.errors import StopRequested
from llm import LLMInterface
from providers.pacing import PACE
from providers.rate_headers import parse_duration, read_rate_headers
from providers.ratelimit import LocalLimiter, RateLimits, waiting_as
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import (
    anthropic_error,
    anthropic_reply,
    anthropic_script,
    openai_error,
    openai_reply,
    openai_script,
)
from tests.fakes.quota_server import QuotaServer

OPENAI_HEADERS = {  # as api.openai.com sends them (the thread quoted above), at 60 requests a minute, used up
    "x-ratelimit-limit-requests": "60", "x-ratelimit-limit-tokens": "160000",
    "x-ratelimit-remaining-requests": "0", "x-ratelimit-remaining-tokens": "159976",
    "x-ratelimit-reset-requests": "1m0s", "x-ratelimit-reset-tokens": "9ms",
}
MESSAGES = [{"role": "user", "content": "hi"}]


class FakeTime:
    """A wall clock that moves only when somebody sleeps."""

    def __init__(self) -> None:
        self.now = time.time()
        self.slept: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def limits_on(clock: FakeTime, rpm: int | None = None, tpm: int | None = None) -> RateLimits:
    return RateLimits(rpm, tpm, factory=lambda name, r, t, limited: LocalLimiter(
        name, r, t, limited=limited, clock=clock.time, sleep=clock.sleep), clock=clock.time)


def test_openai_reset_durations_are_read() -> None:
    assert parse_duration("12ms") == pytest.approx(0.012)
    assert parse_duration("6m0s") == 360.0
    assert parse_duration("1h2m3.5s") == pytest.approx(3723.5)
    assert parse_duration("soon") is None
    read = read_rate_headers(OPENAI_HEADERS, now=0.0)
    assert read.requests is not None and (read.requests.remaining, read.requests.reset_in) == (0, 60.0)
    assert read.requests.refill_rate() == 1.0  # the bucket refills 60 requests in 60 s
    assert read.tokens is not None and read.tokens.remaining == 159976


def test_anthropic_token_headers_use_the_limit_in_effect() -> None:
    reset = "2026-11-25T18:01:00Z"
    both = {"anthropic-ratelimit-input-tokens-remaining": "30000", "anthropic-ratelimit-input-tokens-reset": reset,
            "anthropic-ratelimit-output-tokens-remaining": "7000", "anthropic-ratelimit-output-tokens-reset": reset}
    combined = {**both, "anthropic-ratelimit-tokens-remaining": "25000", "anthropic-ratelimit-tokens-reset": reset}
    now = datetime(2026, 11, 25, 18, 0, 30, tzinfo=UTC).timestamp()
    tokens = read_rate_headers(combined, now).tokens
    assert tokens is not None and (tokens.remaining, tokens.reset_in) == (25000, 30.0)  # "most restrictive"
    assert read_rate_headers(both, now).tokens.remaining == 7000  # type: ignore[union-attr]


def test_rpm_spaces_the_requests_evenly_instead_of_sending_the_minute_at_once() -> None:
    clock = FakeTime()
    limiter = limits_on(clock, rpm=3).limiter("openai")
    waits = []
    for _ in range(3):
        waits.append(limiter.acquire(10))
        limiter.observe({}, 10)  # its reply
    clock.now += 10
    interval = 20 / PACE  # 60 s / 3, with a little room for the network's jitter
    assert waits == [0.0, pytest.approx(interval), pytest.approx(interval)]
    assert limiter.acquire(10) == pytest.approx(interval - 10)


def test_under_rpm_the_first_request_goes_alone_until_its_reply_is_in() -> None:
    clock = FakeTime()
    limiter = limits_on(clock, rpm=600).limiter("openai")  # a request every 0.1 s
    limiter.acquire(10)
    clock.now += 5  # the first call is still out (a client's first call sets itself up for a while)
    wait, reason = limiter.state.wait_for(clock.now, 10)  # type: ignore[attr-defined]
    assert wait > 0 and reason == "the first request's reply"
    limiter.observe({}, 10)
    assert limiter.acquire(10) == pytest.approx(0.1 / PACE, abs=1e-6)  # an interval after the reply, not the grant


def test_a_local_server_s_requests_do_not_wait_for_the_first_reply() -> None:
    """A server the user runs states no limits: a batch's first requests go together, not one and then the rest."""
    started, release = threading.Event(), threading.Event()
    arrived: list[float] = []

    def slow(request: Request) -> Response:
        if not request.path.endswith("/chat/completions"):
            return Response(404, {"error": "not found"})  # the window probes of a local server
        arrived.append(time.monotonic())
        if len(arrived) == 1:
            started.set()
            release.wait(10)  # the first reply is held until the second request has arrived
        return openai_reply("Final Answer: 4")

    with LoopbackServer(slow) as loop:
        settings = Settings(model="openai:my-local-model", openai_base_url=loop.url + "/v1")
        llm = LLMInterface.from_spec("openai:my-local-model", settings, limits=RateLimits())
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(llm.complete, MESSAGES)
            started.wait(10)
            second = pool.submit(llm.complete, MESSAGES)
            deadline = time.monotonic() + 10
            while len(arrived) < 2 and time.monotonic() < deadline:
                time.sleep(0.01)
            release.set()
            replies = [first.result(), second.result()]
    assert len(arrived) == 2 and arrived[1] < arrived[0] + 9  # the second went while the first was out
    assert [r.text for r in replies] == ["Final Answer: 4"] * 2


def test_tpm_paces_by_the_tokens_really_used_once_a_reply_is_in() -> None:
    clock = FakeTime()
    limiter = limits_on(clock, tpm=10_000).limiter("openai")  # 10,000 a minute: 1,000 take 6 s to come back
    limiter.acquire(8_000)  # prompt + max_tokens, as the request is sent
    limiter.observe({}, 1_000)  # the reply used far less: the rest comes back
    assert limiter.acquire(8_000) == pytest.approx(6.0 / PACE)
    assert limiter.acquire(8_000) == pytest.approx(48.0 / PACE)  # no reply yet: its whole estimate counts


def test_openai_headers_through_the_sdk_space_the_next_requests_at_the_stated_limit() -> None:
    clock = FakeTime()
    reply = openai_reply("Final Answer: 4", 10, 5)
    with LoopbackServer(openai_script(Response(200, reply.body, headers=OPENAI_HEADERS))) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1")
        llm = LLMInterface.from_spec("openai:gpt-4.1-mini", settings, limits=limits_on(clock),
                                     sleep=clock.sleep, clock=clock.time)
        first = llm.complete(MESSAGES)  # type: ignore[arg-type]
        limiter = llm.backends[0].limiter  # type: ignore[attr-defined]
        limiter.state.grants.clear()  # only what the headers say counts here
        waits = [limiter.acquire(10) for _ in range(3)]  # three more tasks ask at once
    assert dict(first.rate_headers)["x-ratelimit-remaining-requests"] == "0"
    assert first.rate_wait == 0.0
    assert waits == [pytest.approx(1.0 / PACE)] * 3  # 60 a minute: one a second (and 3% room), not all at once


def test_anthropic_headers_through_the_sdk_hold_the_next_request_until_a_spent_allowance_resets() -> None:
    clock = FakeTime()
    clock.now = float(int(clock.now))  # whole seconds, like the header's time

    def at(seconds: float) -> str:
        return datetime.fromtimestamp(clock.now + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    headers = {"anthropic-ratelimit-requests-limit": "50", "anthropic-ratelimit-requests-remaining": "49",
               "anthropic-ratelimit-requests-reset": at(1), "anthropic-ratelimit-tokens-remaining": "0",
               "anthropic-ratelimit-tokens-reset": at(20)}
    reply = anthropic_reply("Final Answer: 4")
    with LoopbackServer(anthropic_script(Response(200, reply.body, headers=headers))) as server:
        settings = Settings(model="anthropic:claude-haiku-4-5", anthropic_api_key="k", anthropic_base_url=server.url)
        llm = LLMInterface.from_spec("anthropic:claude-haiku-4-5", settings, limits=limits_on(clock),
                                     sleep=clock.sleep, clock=clock.time)
        llm.complete(MESSAGES)  # type: ignore[arg-type]
        second = llm.complete(MESSAGES)  # type: ignore[arg-type]
    assert second.rate_wait == pytest.approx(20.0)  # no tokens left until the reset (50 a minute would pace 1.2 s)


def test_a_429_pauses_every_task_on_that_provider_until_its_retry_after() -> None:
    clock = FakeTime()
    limits = limits_on(clock)
    script = openai_script(openai_error(429, "Rate limit reached for gpt-4.1-mini", type_="requests",
                                        code="rate_limit_exceeded", headers={"retry-after": "7"}),
                           openai_reply("Final Answer: 4"))
    with LoopbackServer(script) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1")
        llm = LLMInterface.from_spec("openai:gpt-4.1-mini", settings, limits=limits, sleep=clock.sleep,
                                     clock=clock.time)
        reply = llm.complete(MESSAGES)  # type: ignore[arg-type]
    assert reply.text == "Final Answer: 4" and reply.rate_wait == pytest.approx(7.0)
    paused_at = clock.now
    clock.now -= 5  # another task asks while the pause still has 5 s to run
    assert limits.limiter("openai").acquire(10) == pytest.approx(5.0)
    assert clock.now == pytest.approx(paused_at)


def test_the_status_names_who_waits_until_when() -> None:
    limits = RateLimits()
    limiter = limits.limiter("anthropic")
    seen: list[object] = []

    def task() -> None:
        with waiting_as("task-7"):
            limiter.acquire(10)

    pause_end = time.time() + 0.3
    limiter.pause_until(pause_end, "anthropic:claude-haiku-4-5 answered 429")
    waiter = threading.Thread(target=task)
    waiter.start()
    while not limits.status() and waiter.is_alive():
        time.sleep(0.01)
    seen.extend(limits.status())
    note = limits.note()
    waiter.join()
    [status] = seen
    assert status.name == "anthropic" and status.waiting == ("task-7",)  # type: ignore[attr-defined]
    assert status.until == pytest.approx(pause_end, abs=1e-3)  # type: ignore[attr-defined]
    assert status.reason == "anthropic:claude-haiku-4-5 answered 429"  # type: ignore[attr-defined]
    assert note.startswith("1 task(s) waiting") and "for anthropic (anthropic:claude-haiku-4-5 answered 429)" in note
    assert limits.status() == [] and limits.note() == ""  # nobody waits any more


def test_the_status_of_paced_callers_says_when_the_last_of_them_goes() -> None:
    limits = RateLimits(rpm=6)  # a request every 10 s
    limiter = limits.limiter("openai")
    limiter.acquire(10)
    limiter.observe({}, 10)
    stop = threading.Event()

    def task(n: int) -> None:
        with cancellation.scope(stop=stop), waiting_as(f"task-{n}"), contextlib.suppress(StopRequested):
            limiter.acquire(10)

    waiters = [threading.Thread(target=task, args=(n,)) for n in range(3)]
    for waiter in waiters:
        waiter.start()
    while sum(len(s.waiting) for s in limits.status()) < 3 and any(w.is_alive() for w in waiters):
        time.sleep(0.01)
    note = limits.note()
    stop.set()
    for waiter in waiters:
        waiter.join()
    assert note.startswith("3 task(s) waiting") and note.endswith("s for openai (--rpm 6)")
    seconds = float(note.split(" s for ")[0].rsplit(" ", 1)[1])
    assert 20 < seconds <= 31  # the next goes in about 10 s, the last two intervals later


def test_a_burst_of_concurrent_calls_under_rpm_meets_no_429_from_a_server_holding_its_quota_per_second() -> None:
    server = QuotaServer(600, "anthropic")  # 600 a minute held as a bucket of 10, refilled at 10 a second
    with LoopbackServer(server) as loop:
        settings = Settings(model="anthropic:claude-haiku-4-5", anthropic_api_key="k", anthropic_base_url=loop.url)
        llm = LLMInterface.from_spec("anthropic:claude-haiku-4-5", settings, limits=RateLimits(rpm=600))
        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(lambda _: llm.complete(MESSAGES), range(16)))  # type: ignore[arg-type]
    arrivals = [a.at for a in server.arrivals]
    assert [r.text for r in replies] == ["Final Answer: 4"] * 16
    assert server.refused == 0 and len(arrivals) == 16  # (all at once, 6 of them would have met a 429)
    assert max(arrivals) - min(arrivals) >= 15 * 0.1  # one at a time, 60/600 s apart


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_burst_without_rpm_meets_no_429_once_the_headers_have_stated_the_limit(provider: str) -> None:
    server = QuotaServer(600, provider, rule="bucket")  # its headers state 600 a minute; it holds 10 a second
    with LoopbackServer(server) as loop:
        spec = {"openai": "openai:gpt-4.1-mini", "anthropic": "anthropic:claude-haiku-4-5"}[provider]
        settings = Settings(model=spec, openai_api_key="k", openai_base_url=loop.url + "/v1", anthropic_api_key="k",
                            anthropic_base_url=loop.url)
        llm = LLMInterface.from_spec(spec, settings, limits=RateLimits())  # no --rpm: the headers only
        with ThreadPoolExecutor(16) as pool:
            replies = list(pool.map(lambda _: llm.complete(MESSAGES), range(16)))  # type: ignore[arg-type]
    arrivals = [a.at for a in server.arrivals]
    assert [r.text for r in replies] == ["Final Answer: 4"] * 16
    assert server.refused == 0 and len(arrivals) == 16  # (sent at once, as before: 4 and 10 429s)
    assert max(arrivals) - min(arrivals) >= 15 * 0.1  # the first alone, then one at a time, 60/600 s apart


def test_stated_limits_pace_like_rpm_but_rpm_and_tpm_win_where_given() -> None:
    clock = FakeTime()
    stated = {"x-ratelimit-limit-requests": "600", "x-ratelimit-remaining-requests": "599",
              "x-ratelimit-reset-requests": "100ms", "x-ratelimit-limit-tokens": "60000",
              "x-ratelimit-remaining-tokens": "59000", "x-ratelimit-reset-tokens": "1s"}
    waits: dict[tuple[int | None, int | None], tuple[float, str]] = {}
    for rpm, tpm in ((None, None), (6, None), (None, 600_000)):
        limiter = limits_on(clock, rpm=rpm, tpm=tpm).limiter("openai")
        limiter.acquire(10)
        limiter.observe(stated, 900, 100)  # the first reply: 1,000 tokens used
        waits[rpm, tpm] = limiter.state.wait_for(clock.now, 2_000)  # type: ignore[attr-defined]
    # a second's 1,000 tokens were spent: a request of 2,000 goes once they are back, and holds the next ones
    assert waits[None, None] == (pytest.approx(1.0 / PACE), "the provider's 60,000 tokens a minute")
    assert waits[6, None] == (pytest.approx(10 / PACE), "--rpm 6")  # not the stated 600 a minute
    assert waits[None, 600_000] == (pytest.approx(0.1 / PACE, abs=1e-6), "the provider's 600 requests a minute")


def test_anthropic_input_and_output_limits_count_the_prompt_and_the_reply_really_used() -> None:
    clock = FakeTime()
    stated = {"anthropic-ratelimit-input-tokens-limit": "60000", "anthropic-ratelimit-input-tokens-remaining": "60000",
              "anthropic-ratelimit-output-tokens-limit": "6000", "anthropic-ratelimit-output-tokens-remaining": "6000"}
    limiter = limits_on(clock).limiter("anthropic")
    limiter.acquire(500, 8_192)
    limiter.observe(stated, 500, 300)  # 1,000 input and 100 output tokens a second come back
    wait, reason = limiter.state.wait_for(clock.now, 500, 8_192)  # type: ignore[attr-defined]
    # the output's second of 100 refills 3 s after 300 were used; max_tokens would hold it 82 s
    assert (wait, reason) == (pytest.approx(2.0 / PACE), "the provider's 6,000 output tokens a minute")


def test_the_cluster_limits_actor_paces_at_the_stated_limit_too() -> None:
    from run.ray_limits import LimitsKeeper

    keeper = LimitsKeeper()  # the Ray actor's body, called directly
    assert keeper.try_acquire("openai", None, None, 10)[0] <= 0  # granted
    assert keeper.try_acquire("openai", None, None, 10)[1] == "the first request's reply"
    keeper.observe("openai", None, None, {"x-ratelimit-limit-requests": "60", "x-ratelimit-remaining-requests": "59",
                                          "x-ratelimit-reset-requests": "1s"}, 10, 5)
    wait, reason = keeper.try_acquire("openai", None, None, 10)
    assert wait == pytest.approx(1 / PACE, abs=0.05) and reason == "the provider's 60 requests a minute"


def test_a_429_from_anthropic_without_retry_after_still_pauses_the_provider() -> None:
    clock = FakeTime()
    limits = limits_on(clock)
    script = anthropic_script(anthropic_error(429, "Number of request tokens has exceeded your per-minute rate limit",
                                              type_="rate_limit_error"), anthropic_reply("Final Answer: 4"))
    with LoopbackServer(script) as server:
        settings = Settings(model="anthropic:claude-haiku-4-5", anthropic_api_key="k", anthropic_base_url=server.url)
        llm = LLMInterface.from_spec("anthropic:claude-haiku-4-5", settings, limits=limits, sleep=clock.sleep,
                                     clock=clock.time)
        assert llm.complete(MESSAGES).text == "Final Answer: 4"  # type: ignore[arg-type]
    assert clock.slept and clock.slept[0] == pytest.approx(2.0)  # DEFAULT_PAUSE, shared instead of a backoff


def test_a_serper_429_pauses_the_searches_of_every_task_of_the_run() -> None:
    from tests.fakes.loopback import routes
    from tests.test_search import DDG_RESULTS, FakeDDGS
    from tools.web.search import SearchTool
    from tools.web.session import web_session

    arrivals: list[float] = []
    answers = [Response(429, {"message": "Too many requests"}, headers={"retry-after": "0.5"}),
               Response(200, {"organic": [{"title": "T", "link": "https://a.example/", "snippet": "s"}]})]

    def serper(req: object) -> Response:
        arrivals.append(time.time())
        return answers.pop(0)

    with LoopbackServer(routes({"/search": serper})) as server:
        settings = Settings(serper_api_key="k", serper_base_url=server.url)
        with web_session(settings):  # the run's session: every task's search tool shares its limiters
            first = SearchTool(settings, ddgs_factory=lambda: FakeDDGS(DDG_RESULTS)).run(query="q")
            second = SearchTool(settings, ddgs_factory=lambda: FakeDDGS(DDG_RESULTS)).run(query="q")
    assert "Results from DuckDuckGo instead" in str(getattr(first, "text", first)) and "https://a.example/" in second
    assert arrivals[1] - arrivals[0] >= 0.45  # the second task's search waited out the first one's 429


def test_rpm_holds_across_the_concurrent_tasks_of_a_run(monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    from pathlib import Path

    import main
    from providers import ratelimit

    monkeypatch.setattr(ratelimit, "WINDOW", 1.2)  # "a minute" of 1.2 s: a request every 0.6 s
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    Path("tasks.txt").write_text("\n\n".join(f"Question {n}?" for n in range(4)) + "\n")
    with LoopbackServer(openai_script(openai_reply("Final Answer: 4"))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")
        code = main.main(["tasks.txt", "--model", "openai:gpt-4.1-mini", "--concurrency", "4", "--rpm", "2",
                          "--trace-dir", "traces", "-q"])
    waits = sorted(json.loads(line)["rate_wait"] for trace in Path("traces").rglob("*.jsonl")
                   for line in trace.read_text().splitlines() if json.loads(line)["kind"] == "llm_call")
    assert code == 0 and len(waits) == 4
    assert waits[0] == 0.0 and min(waits[1:]) > 0.0  # one went at once, the others one after another
    assert Path("results.html").read_text().count("s for the rate limit") == 3  # in the tasks' timelines
