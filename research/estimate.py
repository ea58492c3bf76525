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


def research_estimate(breadth: int, settings: Settings) -> list[str]:
    """What `main.py research --estimate` prints: the plan, tasks and writer, expected and worst-case cost."""
    tasks = estimate(breadth, settings)
    writer_prompt = PLAN_TOKENS[0] + breadth * FINDING_TOKENS
    tokens_in = PLAN_TOKENS[0] + writer_prompt + (writer_prompt + REPORT_TOKENS)  # plan, write, repair
    tokens_out = PLAN_TOKENS[1] + 2 * REPORT_TOKENS
    price = tasks.price
    expected = None if price is None or tasks.expected is None else \
        tasks.expected + (tokens_in * price[0] + tokens_out * price[1]) / 1_000_000
    worst, why = worst_case(breadth + 1 + WRITER_CALLS, price, settings)  # the plan and each writer call: a cap each
    if expected is not None and worst is not None:
        expected = min(expected, worst)
    basis = (f"sub-questions: {tasks.basis}; plan and writer: about {tokens_in:,} prompt + {tokens_out:,} reply "
             "tokens")
    whole = RunEstimate(breadth, tasks.model, price, expected, basis, worst,
                        f"{why}; --max-run-cost covers the whole report")
    return [f"research: 1 planning call, up to {breadth} sub-questions (--breadth) as tasks, then the writer "
            f"(write and one repair, each continued at most {CONTINUATIONS} times when cut off)", *whole.lines()]
