"""What prompt caching saves on a 15-step ReAct task, per provider, at list prices.

A ReAct loop resends the same growing prefix every step. The usage of each step is built in the shape the
providers report it (recorded in tests/fixtures/real_api/replies.json): Anthropic's input_tokens /
cache_read_input_tokens / cache_creation_input_tokens with the agent's cache breakpoints, OpenAI's
prompt_tokens_details.cached_tokens and Gemini's cachedContentTokenCount (automatic prefix caching, which
hits in 128-token steps on OpenAI once a prefix reaches 1,024 tokens). Prices: providers/pricing.py.

    python benchmarks/cost.py
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from providers.pricing import cost_usd  # noqa: E402

STEPS = 15
SYSTEM_TOKENS = 2_400  # the ReAct system prompt with its tool descriptions
TASK_TOKENS = 150
THOUGHT_TOKENS = 180  # each reply: Thought + Action
OBSERVATION_TOKENS = 900  # each tool result as the memory keeps it
MIN_CACHED_PREFIX = 1_024  # below this no provider caches a prefix
MODELS = ("anthropic:claude-sonnet-5-5", "openai:gpt-5.4-mini", "gemini:gemini-3.8-flash")


@dataclass(frozen=True)
class StepUsage:
    """One call's tokens as the provider bills them (prompt_tokens is the whole prompt)."""

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0
    cache_write_tokens: int = 0


def prompt_sizes() -> list[int]:
    """The prompt of each step: system + task + every earlier step's reply and observation."""
    return [SYSTEM_TOKENS + TASK_TOKENS + n * (THOUGHT_TOKENS + OBSERVATION_TOKENS) for n in range(STEPS)]


def anthropic_steps(cached: bool) -> list[StepUsage]:
    """Breakpoints on the system prompt and the newest turns: each step re-reads the previous prompt."""
    out, previous = [], 0
    for prompt in prompt_sizes():
        if not cached:
            out.append(StepUsage(prompt, THOUGHT_TOKENS))
            continue
        read = previous if previous >= MIN_CACHED_PREFIX else 0
        out.append(StepUsage(prompt, THOUGHT_TOKENS, cached_tokens=read, cache_write_tokens=prompt - read))
        previous = prompt
    return out


def automatic_steps(cached: bool) -> list[StepUsage]:
    """OpenAI / Gemini: the previous prompt is a cached prefix, counted in 128-token steps, no write charge."""
    out, previous = [], 0
    for prompt in prompt_sizes():
        hit = previous // 128 * 128 if cached and previous >= MIN_CACHED_PREFIX else 0
        out.append(StepUsage(prompt, THOUGHT_TOKENS, cached_tokens=hit))
        previous = prompt
    return out


def task_cost(model: str, steps: list[StepUsage]) -> float:
    """The task's cost in USD at the model's list prices and cache rates."""
    total = 0.0
    for s in steps:
        cost = cost_usd(model, s.prompt_tokens, s.completion_tokens, cached_tokens=s.cached_tokens,
                        cache_write_tokens=s.cache_write_tokens)
        assert cost is not None, f"{model} has no price"
        total += cost
    return total


def main() -> None:
    """Print the cost of the task with and without prompt caching for each provider's default model."""
    sizes = prompt_sizes()
    print(f"{STEPS}-step task: prompts grow from {sizes[0]:,} to {sizes[-1]:,} tokens "
          f"({sum(sizes):,} prompt tokens in all), {THOUGHT_TOKENS} output tokens per step\n")
    print(f"{'model':32} {'no caching':>11} {'caching':>9} {'saved':>6} {'cached share':>13}")
    for model in MODELS:
        build = anthropic_steps if model.startswith("anthropic:") else automatic_steps
        plain, cached = task_cost(model, build(False)), task_cost(model, build(True))
        share = sum(s.cached_tokens for s in build(True)) / sum(sizes)
        print(f"{model:32} {f'${plain:.4f}':>11} {f'${cached:.4f}':>9} {1 - cached / plain:>6.0%} {share:>13.0%}")


if __name__ == "__main__":
    main()
