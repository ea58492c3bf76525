"""--estimate for research: the planning call, up to --breadth sub-question tasks and the writer's calls,
priced before any call (run/estimate.py's prices, recorded averages and caps)."""

from __future__ import annotations

from config import Settings
from research.write import CONTINUATIONS
from run.estimate import RunEstimate, estimate, worst_case

PLAN_TOKENS = (600, 300)  # prompt, reply of the planning call
FINDING_TOKENS = 700  # what one sub-question's findings and its sources add to the writer's prompt
REPORT_TOKENS = 2_500  # a report's length in tokens
WRITER_CALLS = 2 * (1 + CONTINUATIONS)  # write and repair, each continued at most CONTINUATIONS times


def research_estimate(breadth: int, settings: Settings, depth: int = 1, given: list[str] | None = None) -> list[str]:
    """What `main.py research --estimate` prints: the plan, tasks and writer, expected and worst-case cost.

    --depth N: up to `breadth` more sub-questions a round after the first, each round after a follow-up call
    that sees every finding so far; --plan FILE: its sub-questions, no planning call."""
    first = len(given) if given else breadth
    subs, plans = first + (depth - 1) * breadth, (0 if given else 1) + (depth - 1)
    tasks = estimate(subs, settings)
    writer_prompt = PLAN_TOKENS[0] + subs * FINDING_TOKENS
    followups = sum(PLAN_TOKENS[0] + (first + (r - 1) * breadth) * FINDING_TOKENS for r in range(1, depth))
    tokens_in = (0 if given else PLAN_TOKENS[0]) + followups + writer_prompt + (writer_prompt + REPORT_TOKENS)
    tokens_out = plans * PLAN_TOKENS[1] + 2 * REPORT_TOKENS
    price = tasks.price
    expected = None if price is None or tasks.expected is None else \
        tasks.expected + (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    worst, why = worst_case(subs + plans + WRITER_CALLS, price, settings)  # each planning and writer call: a cap each
    if expected is not None and worst is not None:
        expected = min(expected, worst)
    basis = (f"sub-questions: {tasks.basis}; plan and writer: about {tokens_in:,} prompt + {tokens_out:,} reply "
             "tokens")
    whole = RunEstimate(subs, tasks.model, price, expected, basis, worst,
                        f"{why}; --max-run-cost covers the whole report")
    planned = f"the {first} sub-questions of the plan file" if given else \
        f"1 planning call, up to {breadth} sub-questions (--breadth)"
    rounds = f", then up to {depth - 1} more round(s) (--depth {depth}): a follow-up call and up to {breadth} " \
             f"sub-questions each, {subs} at most in all" if depth > 1 else ""
    return [f"research: {planned} as tasks{rounds}, then the writer (write and one repair, each continued at most "
            f"{CONTINUATIONS} times when cut off)", *whole.lines()]
