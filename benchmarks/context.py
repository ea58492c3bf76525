"""Context benchmark: a scripted 40-step task with 24k-character pages, run with three memories.

Run: `python benchmarks/context.py`. Prints one table row per memory: the largest prompt, the total prompt
tokens over the task, whether the budget was exceeded, and how many of the facts planted in the first five
observations are still in the last prompt.

"True" tokens are counted by a deterministic stand-in for a BPE tokenizer: a word (\\w+) is one token per
4 characters (rounded up), every punctuation character is one token, plus 4 tokens per message and 3 to open
the reply. It is denser than the memory's chars/4 estimate on purpose (about 3.5 characters per token on
these pages), so the memory must calibrate from the counts the model reports to stay within the budget.
"""

from __future__ import annotations

import random
import re
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent import ReActAgent  # noqa: E402
from core.chat import Completion, Message  # noqa: E402
from prompt.memory import SUMMARY_SYSTEM, Memory  # noqa: E402
from tools.base import ToolOutput, tool  # noqa: E402

STEPS = 40
PAGE_CHARS = 24_000
BUDGET = 16_000
FACT_PAGES = 5
TASK = ("Collect the weight of every widget batch described on https://example.org/page-1 to page-40 "
        "and report the total weight with its sources.")
_TOKEN = re.compile(r"\w+|[^\w\s]")


def text_tokens(text: str) -> int:
    """The stand-in tokenizer's count for a text: a token per 4 characters of a word, one per punctuation."""
    return sum((len(t) + 3) // 4 for t in _TOKEN.findall(text))


def true_tokens(messages: list[Message]) -> int:
    """The stand-in tokenizer's count for a prompt, with the per-message overhead."""
    return sum(text_tokens(m["content"]) + 4 for m in messages) + 3


def fact(page: int) -> str:
    """The fact planted in one of the first pages."""
    return f"FACT-{page}: widget batch {page} weighs {page * 37} kg (source https://example.org/page-{page})"


def page_text(page: int) -> str:
    """A deterministic 24k-character page; the first five carry a fact in the middle of the text."""
    rng = random.Random(page)
    syllables = ["ka", "lo", "mer", "tin", "sa", "ve", "dor", "qui", "pel", "zu", "ran", "tho"]
    lines: list[str] = []
    size = 0
    while size < PAGE_CHARS:
        words = ["".join(rng.choices(syllables, k=rng.randint(1, 4))) for _ in range(rng.randint(8, 16))]
        line = " ".join(words).capitalize() + rng.choice([".", ",", ";", "!"])
        lines.append(line)
        size += len(line) + 1
    if page <= FACT_PAGES:
        lines.insert(len(lines) * 45 // 100, fact(page))
    return f"# Page {page}\n" + "\n".join(lines)


@tool
def fetch_page(url: str) -> ToolOutput:
    """Fetch a web page and return its text.

    Args:
        url: the page's URL
    """
    page = int(url.rsplit("-", 1)[-1])
    return ToolOutput(page_text(page), sources=[url])


@dataclass
class BenchModel:
    """A scripted model: fetches pages 1..40, then answers; as a summarizer it keeps the FACT lines."""

    agent_prompts: list[int] = field(default_factory=list)
    summary_prompts: list[int] = field(default_factory=list)
    last_prompt: str = ""

    def complete(self, messages: list[Message], stop: list[str] | None = None,
                 max_tokens: int | None = None, temperature: float | None = None) -> Completion:
        """Reply to one call, reporting the stand-in tokenizer's prompt count."""
        prompt = true_tokens(messages)
        if messages[0]["content"] == SUMMARY_SYSTEM:
            self.summary_prompts.append(prompt)
            text = self.summarize(messages[-1]["content"])
        else:
            self.agent_prompts.append(prompt)
            self.last_prompt = "\n".join(m["content"] for m in messages)
            text = self.step(len(self.agent_prompts))
        return Completion(text, "stop", prompt, text_tokens(text), "bench-model")

    @staticmethod
    def summarize(user: str) -> str:
        """Keep every line that carries a planted fact (from the previous notes or the new steps)."""
        kept: list[str] = []
        for line in user.splitlines():
            if "FACT-" in line and line.strip() not in kept:
                kept.append(line.strip())
        return "Facts found:\n" + "\n".join(kept) if kept else "Facts found: none yet."

    @staticmethod
    def step(call: int) -> str:
        """The agent's reply on its n-th call."""
        if call <= STEPS:
            return (f"Thought: page {call} may describe another batch.\nAction: fetch_page\n"
                    f'Action Input: {{"url": "https://example.org/page-{call}"}}')
        return "Thought: I have read every page.\nFinal Answer: the batches weigh 555 kg in total."


@dataclass
class Row:
    """What one run measured (tokens as the stand-in tokenizer counts them, summaries included)."""

    memory: str
    agent_calls: int
    summary_calls: int
    largest: int
    total: int
    facts: int
    status: str
    seconds: float


MemoryMaker = Callable[[BenchModel, Path], Callable[[], Memory]]


def run(name: str, make_memory: MemoryMaker) -> Row:
    """Run the task once with one memory; measure what the model received."""
    model = BenchModel()
    with tempfile.TemporaryDirectory() as tmp:
        agent = ReActAgent(model, [fetch_page], max_steps=STEPS + 1,
                           memory_factory=make_memory(model, Path(tmp)))
        started = time.perf_counter()
        result = agent.run(TASK)
        elapsed = time.perf_counter() - started
    prompts = model.agent_prompts + model.summary_prompts
    facts = sum(fact(p) in model.last_prompt for p in range(1, FACT_PAGES + 1))
    return Row(name, len(model.agent_prompts), len(model.summary_prompts), max(prompts), sum(prompts), facts,
               result.status, elapsed)


def full_history(model: BenchModel, workspace: Path) -> Callable[[], Memory]:
    """Every observation verbatim, nothing dropped (what most frameworks do)."""
    return lambda: Memory(budget_tokens=10**9, observation_chars=10**9)


def truncation_only(model: BenchModel, workspace: Path) -> Callable[[], Memory]:
    """Observations cut to a quarter of the budget, oldest steps dropped with a note; no summaries."""
    return lambda: Memory(budget_tokens=BUDGET, workspace=workspace)


def with_summaries(model: BenchModel, workspace: Path) -> Callable[[], Memory]:
    """Observations cut, oldest steps folded into a running summary written by the model."""
    return lambda: Memory(budget_tokens=BUDGET, workspace=workspace, summarizer=model)


def main() -> None:
    """Run the three memories and print the table."""
    rows = [run("full history", full_history), run("truncation only (drop oldest)", truncation_only),
            run("truncation + summaries", with_summaries)]
    full = rows[0].total
    print(f"{STEPS} steps, {PAGE_CHARS:,}+ characters per observation, budget {BUDGET:,} tokens "
          "(stand-in tokenizer: see the module docstring)\n")
    header = ("memory", "calls (agent+summary)", "largest prompt", "total prompt tokens", "vs full",
              "budget exceeded", "facts in last prompt", "status", "seconds")
    print(" | ".join(header))
    print(" | ".join("---" for _ in header))
    for r in rows:
        print(" | ".join([r.memory, f"{r.agent_calls}+{r.summary_calls}", f"{r.largest:,}", f"{r.total:,}",
                          f"{r.total / full:.0%}", "yes" if r.largest > BUDGET else "no",
                          f"{r.facts}/{FACT_PAGES}", r.status, f"{r.seconds:.1f}"]))
    best = rows[2]
    print(f"\ngoals with summaries: largest prompt within budget: {best.largest <= BUDGET}; total <= 1/4 of "
          f"full history: {best.total * 4 <= full}; planted facts survive: {best.facts == FACT_PAGES}")


if __name__ == "__main__":
    main()
