"""The app's live questions: the steps a page sees, in order, with usage so far; Stop; one question at a time."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Any

import pytest

from agent import Event
from report.markdown import TaskRecord
from run.conversation import Turn, step_events
from ui.sessions import Busy, LiveConversation

SCRAPE = 'Thought: read the report\nAction: scrape\nAction Input: {"url": "https://example.org/r"}'


class FakeConversation:
    """Emits the agent's events for one scrape step and an answer, as run/conversation.py would."""

    def __init__(self, hold: threading.Event | None = None, retry: bool = False) -> None:
        self.turns: list[Turn] = []
        self.hold, self.retry = hold, retry

    def cost(self) -> float | None:
        return sum(t.record.cost or 0.0 for t in self.turns)

    def ask(self, question: str, files: list[Path], on_event: Any, stop: threading.Event) -> Turn:
        n = len(self.turns) + 1
        events = [Event("llm_call", 1, {"completion": SCRAPE, "prompt_tokens": 100, "completion_tokens": 20,
                                        "cost": 0.001}),
                  Event("tool_call", 1, {"tool": "scrape", "arguments": {"url": "https://example.org/r"},
                                         "observation": "line\n" * 9, "full_observation_chars": 45}),
                  Event("llm_call", 2, {"completion": "Final Answer: done [1]", "prompt_tokens": 150,
                                        "completion_tokens": 5, "cost": 0.002})]
        if self.retry:  # the provider's 429, then the retry: the page's status line says so
            events.insert(0, Event("llm_retry", 1, {"model": "openai:gpt-4.1-mini", "attempt": 2, "wait": 1.5,
                                                    "max_tokens": 800, "error": "429 rate limited"}))
        for event in events[:len(events) - 1]:
            for step_event in step_events(n, event):
                on_event(step_event)
        if self.hold is not None:
            self.hold.wait(10)
        status = "stopped" if stop.is_set() else "answered"
        record = TaskRecord(f"k{n}", f"turn-{n}", n, question, status, answer=None if stop.is_set() else "done [1]",
                            sources=[{"n": 1, "url": "https://example.org/r", "title": "R", "read": True,
                                      "error": None}], prompt_tokens=250, completion_tokens=25, cost=0.003)
        turn = Turn(n, question, record)
        self.turns.append(turn)
        return turn


def _all(live: LiveConversation) -> list[dict[str, Any]]:
    """Every event of the running question, read as the app's event stream reads them (in an event loop)."""

    async def read() -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        while True:
            events, over = await live.next_events(len(seen), 5.0)
            seen += events
            if over:
                return seen

    return asyncio.run(read())


def test_the_tool_call_is_shown_before_its_observation_with_usage_so_far() -> None:
    live = LiveConversation(FakeConversation())  # type: ignore[arg-type]
    assert live.start("What does the report say?", []) == 1
    events = _all(live)
    steps = [e["step"] for e in events if e["type"] == "step"]
    assert steps[0]["thought"] == "read the report" and steps[0]["tool"] is None  # the thought, at once
    call = next(s for s in steps if s["tool"])
    assert call["tool"] == "scrape" and call["observation"] == ""  # the call, drawn before the tool ran
    assert call["input"] == "url: https://example.org/r"
    assert steps[-1]["observation"].count("line") == 9
    usage = [e for e in events if e["type"] == "usage"]
    assert usage[0]["tokens"] == 120 and usage[0]["cost"] == pytest.approx(0.001)
    assert usage[-1]["tokens"] == 275 and usage[-1]["cost"] == pytest.approx(0.003)  # the whole question
    assert events[-1]["type"] == "answer" and events[-1]["answer"]["answer"] == "done [1]"
    assert events[-1]["answer"]["sources"][0]["url"] == "https://example.org/r"


def test_usage_so_far_counts_the_earlier_questions_and_one_question_runs_at_a_time() -> None:
    hold = threading.Event()
    live = LiveConversation(FakeConversation(hold))  # type: ignore[arg-type]
    hold.set()
    live.start("first", [])
    _all(live)
    hold.clear()
    assert live.start("second", []) == 2
    with pytest.raises(Busy):
        live.start("third", [])
    live.stop.set()  # as the Stop button does
    hold.set()
    events = _all(live)
    assert events[0]["type"] == "usage" and events[0]["tokens"] == 275 + 120  # the first question's, then this one's
    assert events[-1]["answer"]["status"] == "stopped" and events[-1]["answer"]["answered"] is False


def test_a_retry_of_the_model_call_is_told_to_the_page_as_a_notice() -> None:
    live = LiveConversation(FakeConversation(retry=True))  # type: ignore[arg-type]
    live.start("What does the report say?", [])
    events = _all(live)
    notices = [e["text"] for e in events if e["type"] == "notice"]
    assert notices == ["openai:gpt-4.1-mini: attempt 2 in 1.5 s (max_tokens 800) after: 429 rate limited"]
    assert events.index(next(e for e in events if e["type"] == "notice")) < events.index(
        next(e for e in events if e["type"] == "step"))  # told when it happened, before the step it delayed
