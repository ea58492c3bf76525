"""--estimate: what a run will likely cost and at worst may cost, from prices and recorded calls, calling no model."""

from __future__ import annotations

from dataclasses import dataclass

from cache.store import DB_NAME, open_store
from config import Settings
from core.text import money
from llm import default_model
from providers.pricing import lookup, settings_prices

# Without recorded calls of the model: a typical research task as this agent runs it (a handful of searches
# and reads, a prompt that grows with each observation, short ReAct replies).
ASSUMED_CALLS = 8
ASSUMED_PROMPT = 6_000
ASSUMED_REPLY = 400
LARGE_RUN = 50  # tasks from which a run with no cost cap says so at start


@dataclass(frozen=True)
class RunEstimate:
    """A run's expected and worst-case cost, with what they rest on."""

    tasks: int
    model: str
    price: tuple[float, float] | None
    expected: float | None
    basis: str
    worst: float | None
    worst_basis: str
    noun: str = "task"  # question: `ask --estimate`, `chat --estimate` (one question)

    def lines(self) -> list[str]:
        """The estimate as the terminal shows it."""
        price = (f"${self.price[0]:.2f} in / ${self.price[1]:.2f} out per million tokens" if self.price
                 else "no known price (AGENT_PRICES_FILE can add it)")
        expected = "unknown" if self.expected is None else money(self.expected)
        worst = (money(self.worst) if self.worst is not None
                 else "unknown" if self.price is None else "unbounded: no cap set")
        what = "1 question" if self.noun == "question" else f"{self.tasks} task(s)"
        return [f"{what}, model {self.model}, {price}",
                f"expected cost: {expected} ({self.basis})",
                f"worst case: {worst} ({self.worst_basis})"]


def dearest_price(specs: list[str], settings: Settings) -> tuple[float, float] | None:
    """USD per million (input, output): the dearest among the model and its fallbacks with a known price."""
    table = settings_prices(settings)
    known = [e for e in (lookup(s, table) for s in specs) if e is not None]
    return (max(e[0] for e in known), max(e[1] for e in known)) if known else None


def per_task(model: str, settings: Settings) -> tuple[float, float, float, str]:
    """(calls, prompt tokens, reply tokens) of a typical task of this model, and where they come from."""
    if settings.cache_dir is not None and (settings.cache_dir / DB_NAME).is_file():
        recorded = open_store(settings.cache_dir).model_averages(model)
        if recorded:
            calls = recorded["calls"] / max(recorded["tasks"], 1)
            return (calls, recorded["prompt_tokens"], recorded["completion_tokens"],
                    f"this model's {int(recorded['calls']):,} recorded calls in {settings.cache_dir}: {calls:.1f} "
                    f"calls a task of {recorded['prompt_tokens']:,.0f} prompt + "
                    f"{recorded['completion_tokens']:,.0f} reply tokens")
    calls = min(ASSUMED_CALLS, settings.max_steps + 1)  # a task makes one call per step and one to answer
    return (calls, ASSUMED_PROMPT, ASSUMED_REPLY,
            f"assumed {calls} calls a task of {ASSUMED_PROMPT:,} prompt + {ASSUMED_REPLY} reply tokens; "
            "no recorded calls of this model (--cache DIR records them)")


def worst_case(tasks: int, price: tuple[float, float] | None, settings: Settings) -> tuple[float | None, str]:
    """The most the caps allow the run to spend, with which caps say so (None: nothing bounds it)."""
    s, bounds = settings, []
    if price is None:  # a cost cap is checked against the price: without one, no dollar figure is true
        tokens = (f"; --max-tokens-per-task caps each task at {s.max_tokens_per_task:,} tokens"
                  if s.max_tokens_per_task is not None else "")
        return None, f"no known price, so --max-cost / --max-run-cost cannot be enforced{tokens}"
    if s.max_cost is not None:
        bounds.append((tasks * s.max_cost, f"{tasks} x --max-cost {money(s.max_cost)}"))
    if s.max_tokens_per_task is not None:
        per = s.max_tokens_per_task * max(price) / 1_000_000
        bounds.append((tasks * per, f"{tasks} x --max-tokens-per-task {s.max_tokens_per_task:,} at the output price"))
    if s.max_run_cost is not None:
        bounds.append((s.max_run_cost, f"--max-run-cost {money(s.max_run_cost)}"))
    if not bounds:
        return None, "set --max-cost or --max-run-cost to bound it"
    value, why = min(bounds)
    return value, f"{why}; a run may pass it by at most one call per task in flight"


def estimate(tasks: int, settings: Settings, model: str | None = None, noun: str = "task") -> RunEstimate:
    """The estimate for `tasks` tasks (or one question) under these settings (the model is resolved, never called)."""
    model = model or default_model(settings)
    price = dearest_price([model, *settings.fallback_models], settings)
    calls, prompt, reply, basis = per_task(model, settings)
    expected = None if price is None else tasks * calls * (prompt * price[0] + reply * price[1]) / 1_000_000
    worst, worst_basis = worst_case(tasks, price, settings)
    if expected is not None and worst is not None and expected > worst:
        expected, basis = worst, f"the caps stop it there; uncapped {money(expected)}: {basis}"
    return RunEstimate(tasks, model, price, expected, basis, worst, worst_basis, noun)


def unbounded_note(tasks: int, settings: Settings, model: str) -> list[str]:
    """The line a large run with no cost cap shows at start (nothing for small or capped runs)."""
    if tasks < LARGE_RUN or settings.max_cost is not None or settings.max_run_cost is not None:
        return []
    e = estimate(tasks, settings, model)
    expected = "unknown" if e.expected is None else money(e.expected)
    return [f"{tasks} tasks and no cost cap: expected cost {expected}, worst case unbounded (--estimate tells "
            "more; --max-cost or --max-run-cost bound it)"]
