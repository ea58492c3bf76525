"""The conversations the app is running now: each question in a worker thread, its events kept for the page.

This is the only state the app holds, and only while a conversation is in use: the turns, records and traces
are the run store's (run/conversation.py writes them), so `main.py runs` and `main.py report` see what the app
did. A page waiting for events waits in the event loop (`next_events`), holding no worker thread; a
conversation left without a question for IDLE_SECONDS, or beyond the KEEP_IDLE most recent idle ones, is
released (its history stays in the store).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from core.errors import ConfigError, LLMError, ResultsWriteError
from report.html.data import Step, apply_event
from run.conversation import Conversation, StepEvent
from ui.views import answer_json, step_json


class Busy(Exception):  # noqa: N818 (a state, not a failure)
    """The conversation is still answering its last question."""


class EventFeed:
    """The events a page reads while a job (a question, a research) runs: pushed from its worker thread, awaited
    in the event loop, replayed from the first to a page that (re)connects."""

    def __init__(self) -> None:
        self.events: list[dict[str, Any]] = []
        self.running = False
        self._changed = threading.Condition()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Event]] = []  # pages in next_events

    async def next_events(self, seen: int, timeout: float) -> tuple[list[dict[str, Any]], bool]:
        """The events after the first `seen` (waiting up to `timeout` for one in the event loop, not a thread),
        and whether the job is over."""
        waiter = (asyncio.get_running_loop(), asyncio.Event())
        with self._changed:
            if len(self.events) > seen or not self.running:
                return self.events[seen:], not self.running
            self._waiters.append(waiter)
        try:
            await asyncio.wait_for(waiter[1].wait(), timeout)
        except TimeoutError:
            pass
        finally:
            with self._changed:
                self._waiters.remove(waiter)
        with self._changed:
            return self.events[seen:], not self.running

    def wait_idle(self, timeout: float) -> bool:
        """Wait until no job runs (at most `timeout` s); True when none does."""
        with self._changed:
            return self._changed.wait_for(lambda: not self.running, timeout)

    def _push(self, event: dict[str, Any]) -> None:
        with self._changed:
            self.events.append(event)
            self._wake()

    def _wake(self) -> None:
        """Tell every waiter that something changed (called with the lock held, from any thread)."""
        self._changed.notify_all()
        for loop, event in self._waiters:
            with contextlib.suppress(RuntimeError):  # its loop has closed (the app is stopping)
                loop.call_soon_threadsafe(event.set)


async def event_stream(live: EventFeed) -> AsyncIterator[str]:
    """Server-Sent Events: the job's events from the first (a page that reconnects redraws), then `end`.
    It waits in the event loop: a page left open holds no worker thread."""
    seen = 0
    while True:
        events, over = await live.next_events(seen, 5.0)
        seen += len(events)
        for event in events:
            yield f"data: {json.dumps(event, ensure_ascii=False)}\n\n"
        if over:
            yield "event: end\ndata: {}\n\n"
            return
        if not events:
            yield ": waiting\n\n"  # a comment: finds a closed page, keeps proxies from timing out


class LiveConversation(EventFeed):
    """One conversation of this app: the engine's Conversation and the events of its current question."""

    def __init__(self, conversation: Conversation, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__()  # events: the current question's
        self.conversation, self._clock = conversation, clock
        self.key = secrets.token_hex(8)  # the page's handle until the store names the run
        self.idle_since = clock()  # when its last question ended (or it was made)
        self.stop = threading.Event()

    def start(self, question: str, files: list[Path], done: Callable[[], None] = lambda: None) -> int:
        """Answer `question` in the background; the turn's number. Busy while the previous one runs."""
        with self._changed:
            if self.running:
                raise Busy("still answering the last question: stop it or wait")
            self.running, self.events, self.stop = True, [], threading.Event()
            turn = len(self.conversation.turns) + 1
        worker = threading.Thread(target=self._answer, args=(turn, question, files, done), name="ui-question",
                                  daemon=True)
        worker.start()
        return turn

    def totals(self) -> tuple[int, float | None]:
        """Tokens and USD of the conversation's finished questions (cost None when a price is unknown)."""
        return sum(t.record.tokens for t in self.conversation.turns), self.conversation.cost()

    def _answer(self, turn: int, question: str, files: list[Path], done: Callable[[], None]) -> None:
        watcher = _Watcher(turn, question, self._push, *self.totals())
        try:
            record = self.conversation.ask(question, files, on_event=watcher, stop=self.stop).record
            tokens, cost = self.totals()
            self._push({"type": "usage", "turn": turn, "tokens": tokens, "cost": cost})
            self._push({"type": "answer", "turn": turn, "answer": answer_json(record)})
        except (LLMError, ConfigError, ResultsWriteError, OSError) as exc:  # the run would stop: say why, stay up
            self._push({"type": "answer", "turn": turn, "answer": {
                "answered": False, "status": "error", "error": str(exc), "sources": [], "citations": []}})
        finally:
            done()
            with self._changed:
                self.running, self.idle_since = False, self._clock()
                self._wake()


class _Watcher:
    """Turns the engine's step events into what the page draws: steps as the trace reader sees them, usage."""

    def __init__(self, turn: int, question: str, push: Callable[[dict[str, Any]], None], tokens: int = 0,
                 cost: float | None = 0.0) -> None:
        self.turn, self.question, self.push = turn, question, push
        self.steps: dict[int, Step] = {}
        self.tokens, self.cost = tokens, cost  # the conversation's so far, this question's calls added
        self._last: object = None

    def __call__(self, event: StepEvent) -> None:
        raw = event.raw
        if raw is None:
            return
        if event.kind == "notice":  # a model call's retry, timeout or long wait; a warning: the status line
            self.push({"type": "notice", "turn": self.turn, "text": event.text})
            return
        step = self.steps.get(raw.step)
        if raw is not self._last:  # one model reply is a thought and an action: read it once
            self._last = raw
            step = self._apply({"kind": raw.kind, "step": raw.step, **raw.data})
        if event.kind == "action" and step is not None and step.tool is None:  # drawn before the tool runs
            step.tool = event.tool
            args = event.arguments
            step.arguments = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, indent=1)
        shown = step_json(step) if step is not None else None
        if shown is not None:
            self.push({"type": "step", "turn": self.turn, "question": self.question, "step": shown})


    def _apply(self, data: dict[str, Any]) -> Step | None:
        """Fold a trace event into the steps as the trace reader does; count a model call's tokens and cost."""
        if data["kind"] in ("llm_call", "summary"):
            self.tokens += int(data.get("prompt_tokens") or 0) + int(data.get("completion_tokens") or 0)
            call_cost = data.get("cost")
            self.cost = None if self.cost is None or call_cost is None else self.cost + float(call_cost)
            self.push({"type": "usage", "turn": self.turn, "tokens": self.tokens, "cost": self.cost})
        return apply_event(data, self.steps)


IDLE_SECONDS = 3600.0  # a conversation without a question for this long is released
KEEP_IDLE = 32  # at most this many idle conversations are kept for follow-ups (the most recent ones)


class Hub:
    """The app's conversations in use, by key; `new` builds one on the engine (checks the model first)."""

    def __init__(self, factory: Callable[[], Conversation], idle_seconds: float = IDLE_SECONDS,
                 keep_idle: int = KEEP_IDLE, clock: Callable[[], float] = time.monotonic) -> None:
        self._factory, self._lock = factory, threading.Lock()
        self._live: dict[str, LiveConversation] = {}
        self.idle_seconds, self.keep_idle, self._clock = idle_seconds, keep_idle, clock

    def new(self) -> LiveConversation:
        """A fresh conversation (ConfigError when the model or tools cannot be set up); idle ones are released."""
        live = LiveConversation(self._factory(), self._clock)
        with self._lock:
            self._release_idle()
            self._live[live.key] = live
        return live

    def discard(self, key: str) -> None:
        """Forget a conversation (one whose first question never started)."""
        with self._lock:
            self._live.pop(key, None)

    def _release_idle(self) -> None:
        """Drop conversations idle for idle_seconds, and the oldest idle ones beyond keep_idle (lock held)."""
        idle = sorted((live for live in self._live.values() if not live.running), key=lambda c: c.idle_since)
        cutoff = self._clock() - self.idle_seconds
        for n, live in enumerate(idle):
            if live.idle_since < cutoff or n < len(idle) - self.keep_idle:
                del self._live[live.key]

    def get(self, key: str) -> LiveConversation | None:
        """The running conversation with this key, if any."""
        with self._lock:
            return self._live.get(key)

    def stop_all(self, grace: float = 30.0) -> None:
        """Stop every running question, as Ctrl-C stops a batch, and wait (at most `grace` s) for its record."""
        with self._lock:
            running = list(self._live.values())
        for live in running:
            live.stop.set()
        deadline = time.monotonic() + grace
        for live in running:
            live.wait_idle(max(0.0, deadline - time.monotonic()))
