"""Spend caps: per-task and per-run cost caps and a per-task token cap, checked before every model call."""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any

from config import Settings
from core import cancellation
from core.chat import ChatModel, Completion, Message
from core.errors import BudgetExceededError, LLMError
from core.text import money
from providers.families import MIN_REPLY, min_completion
from providers.pricing import cache_multipliers, lookup, settings_prices
from providers.spend import WAIT, LocalRunSpend, RunSpend

CHARS_PER_TOKEN = 3.0  # fewer chars per token than the usual ~4: the prompt estimate errs on the high side
PER_MESSAGE = 4
MIN_COMPLETION = MIN_REPLY  # the shortest reply worth paying for (families.min_completion: more for reasoning models)
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


def _specs(model: Any) -> list[str]:
    """The provider:model specs behind a model: its backends' (primary and fallbacks), else its own name."""
    return [b.spec for b in getattr(model, "backends", [])] or [str(getattr(model, "model", ""))]


def model_price(model: Any, settings: Settings) -> tuple[float, float] | None:
    """USD per million (input, output) tokens: the dearest of the model and its fallbacks with a known price."""
    table = settings_prices(settings)
    known = [e for e in (lookup(s, table) for s in _specs(model)) if e is not None]
    if not known:
        return None
    return max(e[0] for e in known), max(e[1] for e in known)


def model_cache_rates(model: Any) -> tuple[float, float]:
    """(cache read, cache write) multiples of the input price: the dearest of the model and its fallbacks."""
    rates = [cache_multipliers(s) for s in _specs(model)]
    return max(r for r, _ in rates), max(w for _, w in rates)


def unpaid(cap: str, final: bool, left: str, need: str) -> str:
    """Why a cap refuses a call: what was left of it then and what the call needs at least. What the task spent
    is its cost (its final answer included, made after this), never a figure of this moment."""
    if final:
        return f"{cap} could not pay for the final answer: {left} left, the answer needs at least {need}"
    return (f"{cap} could not pay for another step: {left} left, a step with room for the final answer needs at "
            f"least {need}")


@dataclass
class Estimate:
    """What one call may use at most (its max_tokens fitted to the caps), and what it holds of the run's cap."""

    tokens: int
    cost: float | None
    reserved: float = 0.0
    max_tokens: int = 0


@dataclass(frozen=True)
class Fit:
    """One cap's arithmetic for a call: what is left, what the prompt costs, the price of a reply token."""

    left: float
    prompt: float
    per_token: float
    keep: float  # left free for the task's last, answering call (0 for that call itself)

    def tokens(self) -> int:
        """The most reply tokens this cap can pay for."""
        return int((self.left - self.prompt - self.keep) // self.per_token) if self.per_token > 0 else 1 << 30


class RunBudget:
    """The run's cost cap, shared by all tasks through a RunSpend, and the factory of each task's budget."""

    def __init__(self, settings: Settings, price: tuple[float, float] | None, model: str = "",
                 spend: RunSpend | None = None, cache_rates: tuple[float, float] = (1.0, 1.0)) -> None:
        self.settings, self.price, self.model, self.cache_rates = settings, price, model, cache_rates
        self.spend = spend if spend is not None else LocalRunSpend(settings.max_run_cost)
        # A reply of this run reported prompt-cache reads or writes: from then on a task's repeated prompt is
        # priced at the cache-read rate (a provider or server that does not cache is never assumed to).
        self.cache_seen = False

    @classmethod
    def from_settings(cls, settings: Settings, model: Any, spend: RunSpend | None = None) -> RunBudget | None:
        """A budget when any cap is set, else None (no checks at all)."""
        if settings.max_cost is None and settings.max_run_cost is None and settings.max_tokens_per_task is None:
            return None
        return cls(settings, model_price(model, settings), str(getattr(model, "model", "")), spend,
                   model_cache_rates(model))

    def notes(self) -> list[str]:
        """What the run says once at start: a cost cap that cannot be checked because no price is known."""
        s = self.settings
        if self.price is not None or (s.max_cost is None and s.max_run_cost is None):
            return []
        tokens = (f"only --max-tokens-per-task ({s.max_tokens_per_task:,} tokens) limits each task"
                  if s.max_tokens_per_task else "set --max-tokens-per-task to cap the tasks by tokens")
        return [f"no price is known for {self.model or 'the model'}: --max-cost / --max-run-cost cannot be "
                f"enforced and the cost shows n/a; {tokens} (AGENT_PRICES_FILE can add the price)"]

    def may_start(self) -> bool:
        """False (and counted as skipped) once the run's cap has been reached."""
        return self.spend.may_start()

    @property
    def skipped(self) -> int:
        """Tasks the run's cap kept from starting."""
        return self.spend.totals().skipped

    @property
    def exhausted(self) -> str | None:
        """Why no new task may start, once the run's cap is reached."""
        return self.spend.totals().exhausted

    def task_models(self, llm: ChatModel, summary_llm: ChatModel | None) -> tuple[ChatModel, ChatModel]:
        """The task's model and summary model, both charged to one new TaskBudget."""
        task = TaskBudget(self)
        return BudgetedModel(llm, task), BudgetedModel(summary_llm or llm, task)

    def reserve(self, fit: Fit, least_tokens: int, want_tokens: int,
                final: bool = False) -> tuple[str | None, float, int]:
        """Hold the run's share of a call (`final`: the task's last one): (why it cannot be paid or None, USD held,
        reply tokens it pays)."""
        cap = self.settings.max_run_cost
        if cap is None:
            return None, 0.0, want_tokens
        least = fit.prompt + least_tokens * fit.per_token
        while (held := self.spend.reserve(least, fit.prompt + want_tokens * fit.per_token, fit.keep)) == WAIT:
            self.spend_wait()  # it fits unless the calls in flight cost all their estimates allow; they rarely do
        if held is None:
            t = self.spend.totals()
            what = f"the run's cost cap of {money(cap)} (--max-run-cost)"
            # Why no new task starts: no figure, the summary and `main.py runs` say what was spent once all settled.
            self.spend.stop_new(f"{what} left too little for {'a final answer' if final else 'another step'}")
            return unpaid(what, final, money(max(cap - t.spent - t.reserved, 0.0)),
                          money(least + fit.keep)), 0.0, 0
        return None, held, min(want_tokens, int((held - fit.prompt) // fit.per_token) if fit.per_token else want_tokens)

    def spend_wait(self) -> None:
        """Wait a moment for the calls in flight to settle (Ctrl-C and the task's deadline end it)."""
        cancellation.waiter(time.sleep)(WAIT_POLL)
        cancellation.check()

    def settle(self, reserved: float, cost: float | None) -> None:
        """Release a reservation and add what the call really cost."""
        self.spend.settle(reserved, cost or 0.0)

    def report_note(self) -> str | None:
        """The report's line about tasks that were not started, if any."""
        t = self.spend.totals()
        return f"{t.skipped} task(s) not started: {t.exhausted}." if t.skipped else None


class TaskBudget:
    """One task's spend: fits each call's max_tokens to what the caps can pay, keeping room for a last answer."""

    def __init__(self, run: RunBudget) -> None:
        self.run = run
        self.tokens = 0
        self.cost = 0.0
        self.last_prompt = 0  # the previous call's prompt tokens: most of the next prompt is a cache read
        self.last_estimate = self._estimate = 0  # what estimate_prompt_tokens said of that prompt, and of this one
        self.refused: str | None = None
        self.closed = False
        self.tool_charged: list[Completion] = []  # tool calls already charged before they were made

    def before(self, messages: list[Message], max_tokens: int, price: tuple[float, float] | None,
               least_reply: int = MIN_COMPLETION) -> Estimate:
        """Fit the call's max_tokens to the caps; BudgetExceededError when not even a short reply can be paid."""
        final = _LAST_CALL.get()
        if self.closed or (self.refused and not final):
            raise BudgetExceededError(self.refused or "the task's last call was already made", "task")
        if final:
            self.closed = True
        prompt = self._prompt_tokens(messages)
        least = min(least_reply, max_tokens)
        want, reason, cap = self._fit_task(prompt, least, max_tokens, price, final)
        fit, held = self._cost_fit(prompt, price, least, final, left=0.0), 0.0
        if reason is None and fit is not None:
            reason, held, want = self.run.reserve(fit, least, want, final)
            cap = "run"
        if reason is not None:
            self.refused = self.refused or reason
            raise BudgetExceededError(reason, cap)
        cost = None if fit is None else fit.prompt + want * fit.per_token
        return Estimate(prompt + want, cost, held, want)

    def _prompt_tokens(self, messages: list[Message]) -> int:
        """The prompt's tokens: the previous prompt's real count plus what was added, estimated high; the
        high estimate alone for a first call (a ReAct prompt mostly repeats the one before)."""
        self._estimate = estimate = estimate_prompt_tokens(messages)
        if not self.last_prompt or not self.last_estimate:
            return estimate
        return min(estimate, self.last_prompt + max(estimate - self.last_estimate, 0))

    def _fit_task(self, prompt: int, least: int, want: int, price: tuple[float, float] | None,
                  final: bool) -> tuple[int, str | None, str]:
        """The reply tokens the task's own caps can pay, or why not even `least` can be paid."""
        s = self.run.settings
        if s.max_tokens_per_task is not None:
            fit = Fit(s.max_tokens_per_task - self.tokens, prompt, 1.0, 0.0 if final else prompt + least)
            if fit.tokens() < least:
                cap = f"the task's token cap of {s.max_tokens_per_task:,} (--max-tokens-per-task)"
                return 0, unpaid(cap, final, f"{max(int(fit.left), 0):,} tokens",
                                 f"{prompt + least + int(fit.keep):,} tokens"), "task"
            want = min(want, fit.tokens())
        cost_fit = self._cost_fit(prompt, price, least, final, left=(s.max_cost or 0.0) - self.cost)
        if s.max_cost is not None and cost_fit is not None:
            if cost_fit.tokens() < least:
                return 0, unpaid(f"the task's cost cap of {money(s.max_cost)} (--max-cost)", final,
                                 money(max(cost_fit.left, 0.0)),
                                 money(cost_fit.prompt + least * cost_fit.per_token + cost_fit.keep)), "task"
            want = min(want, cost_fit.tokens())
        return want, None, "task"

    def _cost_fit(self, prompt: int, price: tuple[float, float] | None, least: int, final: bool,
                  left: float) -> Fit | None:
        """The cost side of a call: its prompt priced with the part the provider's cache will likely serve."""
        if price is None:
            return None
        read, write = self.run.cache_rates
        cached = min(self.last_prompt, prompt) if self.run.cache_seen else 0  # counted once the provider has cached
        prompt_cost = ((prompt - cached) * write + cached * read) * price[0] / 1_000_000
        per_token = price[1] / 1_000_000
        # The last call's room: at least this prompt again and a short reply.
        keep = 0.0 if final else prompt_cost + least * per_token
        return Fit(left, prompt_cost, per_token, keep)

    def after(self, estimate: Estimate, completions: list[Completion]) -> None:
        """Charge a finished call (a cached one at its recorded cost, so a replay stops where the run did)."""
        cost = 0.0
        for c in (b for done in completions for b in (*done.billed_before, done)):  # as the task's usage counts
            cost += (c.original_cost if c.cached else c.cost) or 0.0
            self.tokens += c.prompt_tokens + c.completion_tokens
            if c.prompt_tokens:
                self.last_prompt, self.last_estimate = c.prompt_tokens, self._estimate
            self.run.cache_seen = self.run.cache_seen or bool(c.cached_tokens or c.cache_write_tokens)
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


def charge_running_task(completion: Completion) -> None:
    """Charge a tool's request that is no chat call (search_docs' embeddings) to the task whose tool is running,
    when it has caps (nothing outside one): its tokens and cost count, and the caps stop the task's next call."""
    budget = _TOOL_BUDGET.get()
    if budget is not None:
        budget.after(Estimate(0, None), [completion])


def tool_budget(model: Any) -> AbstractContextManager[None]:
    """While a tool of the task of `model` runs, models built with tools/models.tool_model() are held to its caps."""
    return charging(model.budget if isinstance(model, BudgetedModel) else None)


def running_task_budget() -> TaskBudget | None:
    """The budget of the task whose tool is running (None outside one): for a thread the tool starts, which does not
    inherit it, to charge its requests with `charging`."""
    return _TOOL_BUDGET.get()


@contextmanager
def charging(budget: TaskBudget | None) -> Iterator[None]:
    """Within the block, tools' own models and requests are charged to `budget` (None: to no task)."""
    token = _TOOL_BUDGET.set(budget)
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
        self.least_reply = max(min_completion(s) for s in _specs(inner))

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """The inner model's reply, if the call fits the caps."""
        estimate = self.budget.before(messages, max_tokens or self.budget.run.settings.max_tokens, self.price,
                                      self.least_reply)
        try:  # max_tokens fitted to what the caps can pay
            completion = self.inner.complete(messages, stop, estimate.max_tokens, temperature)
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
