"""Spend caps: per-task and per-run cost caps and a per-task token cap, checked before every model call."""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from config import Settings
from core import cancellation
from core.chat import ChatModel, Completion, Message
from core.errors import BudgetExceededError, LLMError
from providers.pricing import load_prices, lookup

CHARS_PER_TOKEN = 3.0  # fewer chars per token than the usual ~4: the prompt estimate errs on the high side
PER_MESSAGE = 4
WAIT_POLL = 0.5  # seconds between checks for Ctrl-C or the task's deadline while waiting for calls in flight

IMAGE_TOKENS = 1_600  # the most one downscaled image (long edge 1568 px) costs at any provider
VIDEO_TOKENS_PER_SECOND = 300  # Gemini: 258 a frame at 1 frame/s + 32 of audio, rounded up
_LAST_CALL: contextvars.ContextVar[bool] = contextvars.ContextVar("budget_last_call", default=False)
# The running task's budget while one of its tools runs: the tool's own model calls are checked against it.
_TOOL_BUDGET: contextvars.ContextVar[TaskBudget | None] = contextvars.ContextVar("budget_tool", default=None)


@contextmanager
def last_call() -> Iterator[None]:
    """Mark the calls inside as the task's last one ("answer from what you have gathered")."""
    token = _LAST_CALL.set(True)
    try:
        yield
    finally:
        _LAST_CALL.reset(token)


def estimate_prompt_tokens(messages: list[Message]) -> int:
    """A deliberately high offline estimate of a prompt's tokens."""
    chars = sum(len(m["content"]) for m in messages)
    images = sum(len(m.get("images") or ()) for m in messages)
    video = sum(f.seconds for m in messages for f in m.get("files") or ())
    return (int(chars / CHARS_PER_TOKEN) + PER_MESSAGE * len(messages) + IMAGE_TOKENS * images
            + int(VIDEO_TOKENS_PER_SECOND * video) + 3)


def model_price(model: Any, settings: Settings) -> tuple[float, float] | None:
    """USD per million (input, output) tokens: the dearest of the model and its fallbacks with a known price."""
    table = load_prices(settings.prices_file)
    specs = [b.spec for b in getattr(model, "backends", [])] or [str(getattr(model, "model", ""))]
    known = [e for e in (lookup(s, table) for s in specs) if e is not None]
    if not known:
        return None
    return max(e[0] for e in known), max(e[1] for e in known)


def _usd(value: float) -> str:
    return f"${value:.4f}" if value < 10 else f"${value:,.2f}"


@dataclass
class Estimate:
    """What one call may use at most, and what it reserved from the run's cap."""

    tokens: int
    cost: float | None
    reserved: float = 0.0


class RunBudget:
    """The run's cost cap, shared by all tasks (thread-safe), and the factory of each task's budget."""

    def __init__(self, settings: Settings, price: tuple[float, float] | None, model: str = "") -> None:
        self.settings, self.price, self.model = settings, price, model
        self._lock = threading.Condition()  # settle() wakes calls waiting for the calls in flight
        self.spent = self.reserved = 0.0
        self.exhausted: str | None = None  # why no new task may start
        self.skipped = 0

    @classmethod
    def from_settings(cls, settings: Settings, model: Any) -> RunBudget | None:
        """A budget when any cap is set, else None (no checks at all)."""
        if settings.max_cost is None and settings.max_run_cost is None and settings.max_tokens_per_task is None:
            return None
        return cls(settings, model_price(model, settings), str(getattr(model, "model", "")))

    def notes(self) -> list[str]:
        """What the run says once at start: a cost cap that cannot be checked because no price is known."""
        s = self.settings
        if self.price is not None or (s.max_cost is None and s.max_run_cost is None):
            return []
        tokens = (f"only --max-tokens-per-task ({s.max_tokens_per_task:,} tokens) limits each task"
                  if s.max_tokens_per_task else "set --max-tokens-per-task to cap the tasks by tokens")
        return [f"no price is known for {self.model or 'the model'}: --max-cost / --max-run-cost fall back on "
                f"tokens; {tokens} (AGENT_PRICES_FILE can add the price)"]

    def may_start(self) -> bool:
        """False (and counted as skipped) once the run's cap has been reached."""
        with self._lock:
            if self.exhausted:
                self.skipped += 1
            return not self.exhausted

    def task_models(self, llm: ChatModel, summary_llm: ChatModel | None) -> tuple[ChatModel, ChatModel]:
        """The task's model and summary model, both charged to one new TaskBudget."""
        task = TaskBudget(self)
        return BudgetedModel(llm, task), BudgetedModel(summary_llm or llm, task)

    def reserve(self, cost: float | None, factor: int) -> tuple[str | None, float]:
        """Hold `cost` of the run's cap for a call in flight: (why it does not fit or None, amount held)."""
        cap = self.settings.max_run_cost
        if cap is None or cost is None:
            return None, 0.0
        with self._lock:
            while self.spent + self.reserved + cost * factor > cap:
                if self.reserved <= 0 or self.spent + cost * factor > cap:
                    reason = (f"the run's cost cap of {_usd(cap)} (--max-run-cost) was reached: {_usd(self.spent)} "
                              f"spent, the next call could cost up to {_usd(cost)}")
                    self.exhausted = self.exhausted or reason
                    return reason, 0.0
                # It fits unless the calls in flight cost what their estimates allow; they rarely do: wait for them.
                self._lock.wait(WAIT_POLL)
                cancellation.check()
            self.reserved += cost
        return None, cost

    def settle(self, reserved: float, cost: float | None) -> None:
        """Release a reservation and add what the call really cost."""
        with self._lock:
            self.reserved = max(self.reserved - reserved, 0.0)  # no float dust left "in flight"
            self.spent += cost or 0.0
            cap = self.settings.max_run_cost
            if cap is not None and self.spent >= cap and not self.exhausted:
                self.exhausted = f"the run's cost cap of {_usd(cap)} (--max-run-cost) was reached"
            self._lock.notify_all()

    def report_note(self) -> str | None:
        """The report's line about tasks that were not started, if any."""
        if not self.skipped:
            return None
        return f"{self.skipped} task(s) not started: {self.exhausted}."


class TaskBudget:
    """One task's spend: refuses a call that could pass a cap, keeping room for a last answering call."""

    def __init__(self, run: RunBudget) -> None:
        self.run = run
        self.tokens = 0
        self.cost = 0.0
        self.refused: str | None = None
        self.closed = False
        self.tool_charged: list[Completion] = []  # tool calls already charged before they were made

    def before(self, messages: list[Message], max_tokens: int, price: tuple[float, float] | None) -> Estimate:
        """Check a call before it is made; BudgetExceededError when it could pass a cap."""
        final = _LAST_CALL.get()
        if self.closed or (self.refused and not final):
            raise BudgetExceededError(self.refused or "the task's last call was already made", "task")
        prompt = estimate_prompt_tokens(messages)
        cost = None if price is None else (prompt * price[0] + max_tokens * price[1]) / 1_000_000
        estimate = Estimate(prompt + max_tokens, cost)
        factor = 1 if final else 2  # an ordinary call must leave room for the last one
        reason, cap = self._over(estimate, factor), "task"
        if reason is None:
            (reason, estimate.reserved), cap = self.run.reserve(cost, factor), "run"
        if final:
            self.closed = True
        if reason is not None:
            self.refused = self.refused or reason
            raise BudgetExceededError(reason, cap)
        return estimate

    def _over(self, e: Estimate, factor: int) -> str | None:
        s = self.run.settings
        if s.max_tokens_per_task is not None and self.tokens + e.tokens * factor > s.max_tokens_per_task:
            return (f"the task's token cap of {s.max_tokens_per_task:,} (--max-tokens-per-task) was reached: "
                    f"{self.tokens:,} used, the next call could use up to {e.tokens:,}")
        if s.max_cost is not None and e.cost is not None and self.cost + e.cost * factor > s.max_cost:
            return (f"the task's cost cap of {_usd(s.max_cost)} (--max-cost) was reached: {_usd(self.cost)} "
                    f"spent, the next call could cost up to {_usd(e.cost)}")
        return None

    def after(self, estimate: Estimate, completions: list[Completion]) -> None:
        """Charge a finished call (a cached one at its recorded cost, so a replay stops where the run did)."""
        cost = 0.0
        for c in completions:
            cost += (c.original_cost if c.cached else c.cost) or 0.0
            self.tokens += c.prompt_tokens + c.completion_tokens
        self.cost += cost
        self.run.settle(estimate.reserved, cost)


def charge_tool_call(model: Any, completion: Completion) -> None:
    """Charge a model call a tool made on its own (look, transcribe) to the task of `model`, if it has caps
    (once: a call made through tools/models.tool_model() was checked and charged when it was made)."""
    if isinstance(model, BudgetedModel):
        charged = model.budget.tool_charged
        for i, done in enumerate(charged):
            if done is completion:
                del charged[i]
                return
        model.budget.after(Estimate(0, None), [completion])


@contextmanager
def tool_budget(model: Any) -> Iterator[None]:
    """While a tool of the task of `model` runs, models built with tools/models.tool_model() are held to its caps."""
    token = _TOOL_BUDGET.set(model.budget if isinstance(model, BudgetedModel) else None)
    try:
        yield
    finally:
        _TOOL_BUDGET.reset(token)


def under_tool_budget(model: ChatModel) -> ChatModel:
    """A tool's own model, held to the caps of the task whose tool is running (unchanged outside one)."""
    budget = _TOOL_BUDGET.get()
    return model if budget is None else BudgetedModel(model, budget, tool=True)


class BudgetedModel:
    """A ChatModel that charges every call to a TaskBudget and refuses calls that could pass a cap."""

    def __init__(self, inner: ChatModel, budget: TaskBudget, *, tool: bool = False) -> None:
        self.inner, self.budget, self.tool = inner, budget, tool
        self.price = model_price(inner, budget.run.settings)

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The inner model's reply, if the call fits the caps."""
        estimate = self.budget.before(messages, max_tokens or self.budget.run.settings.max_tokens, self.price)
        try:
            completion = self.inner.complete(messages, stop, max_tokens, temperature)
        except LLMError as exc:  # an empty or blocked reply is billed all the same
            billed = list(getattr(exc, "billed", []))
            self.budget.after(estimate, billed)
            if self.tool:
                self.budget.tool_charged.extend(billed)
            raise
        except BaseException:
            self.budget.after(estimate, [])
            raise
        self.budget.after(estimate, [completion])
        if self.tool:  # the agent hands it to charge_tool_call as well: charged once
            self.budget.tool_charged.append(completion)
        return completion

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)
