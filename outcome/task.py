"""What one task's run is made of and yields: its events, steps, usage and result, and how it ended."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.chat import Completion
from sources.check import Citation
from sources.ledger import SourceLedger

ANSWERED, UNFORMATTED, MAX_STEPS, TIME_LIMIT, ERROR = (
    "answered", "answered_unformatted", "max_steps", "time_limit", "error")
BUDGET = "budget"  # a spend cap (providers/budget.py) stopped the task; it answered from what it had if that still fit


@dataclass
class Event:
    """Something that happened during a run; the CLI turns these into progress, -v output and traces."""

    kind: str  # step_start | llm_call | tool_call | summary | sources | final; a model call's llm_retry |
    # llm_timeout | llm_waiting | llm_error, and warning (core/notices.py)
    step: int
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class Step:
    """One model turn: what it thought, the tool it called and what came back."""

    number: int
    completion: str = ""
    thought: str = ""
    action: str | None = None
    arguments: dict[str, Any] | str | None = None
    observation: str = ""
    duration: float = 0.0
    error: str | None = None
    failures: list[str] = field(default_factory=list)  # a call's recovered failures (a search backend down)


@dataclass
class Usage:
    """Tokens and cost summed over every model call of a task (summaries included)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    calls: int = 0
    cost: float | None = 0.0
    models: list[str] = field(default_factory=list)
    cached_calls: int = 0  # answered from --cache/--replay: they cost $0 now ...
    cached_cost: float | None = 0.0  # ... and this much when they were recorded
    cached_tokens: int = 0  # of prompt_tokens, read from the provider's prompt cache (billed cheaper)
    cache_write_tokens: int = 0  # of prompt_tokens, written to the provider's prompt cache

    def add(self, c: Completion) -> None:
        """Count one completion; the cost becomes unknown as soon as one call's cost is."""
        for billed in c.billed_before:  # replies of this call that were billed but failed (empty, blocked)
            self.add(billed)
        self.cached_tokens += c.cached_tokens
        self.cache_write_tokens += c.cache_write_tokens
        if c.cached:
            self.cached_calls += 1
            self.cached_cost = None if self.cached_cost is None or c.original_cost is None else (
                self.cached_cost + c.original_cost)
        self.prompt_tokens += c.prompt_tokens
        self.completion_tokens += c.completion_tokens
        self.calls += 1
        self.cost = None if self.cost is None or c.cost is None else self.cost + c.cost
        if c.model and c.model not in self.models:
            self.models.append(c.model)

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens


@dataclass
class AgentResult:
    """The outcome of one task."""

    task: str
    answer: str | None = None
    status: str = ERROR
    steps: list[Step] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    elapsed: float = 0.0
    sources: list[str] = field(default_factory=list)  # URLs and files read successfully, in reading order
    error: str | None = None
    ledger: SourceLedger = field(default_factory=SourceLedger)  # every source, numbered, with its text
    citations: list[Citation] = field(default_factory=list)  # the answer's [n] claims and URLs, checked
    notes: list[str] = field(default_factory=list)  # what the model kept with the notes tool, at the end

    @property
    def sourced(self) -> bool:
        """True when the task read at least one source successfully."""
        return self.ledger.sourced

    @property
    def tool_failures(self) -> list[dict[str, Any]]:
        """Each failed tool call (raised, or answered `Error: ...`) and each failure a call recovered from (a search
        backend that failed before another answered): its step, tool and error line."""
        failed = [{"step": s.number, "tool": s.action, "error": _error_line(s.observation)[:500]}
                  for s in self.steps if s.error == "tool" and s.observation.strip()]
        recovered = [{"step": s.number, "tool": s.action, "error": f[:500]} for s in self.steps for f in s.failures]
        return sorted(failed + recovered, key=lambda f: f["step"])  # a recovered one is still a failure to see

    @property
    def cost(self) -> float | None:
        """Cost of the task in USD, None when a model's price is unknown."""
        return self.usage.cost


def _error_line(observation: str) -> str:
    """A failed call's line to list: its `Error: ...` line (under a `[n] Title — URL` source line the browser's
    errors carry), else its first line."""
    lines = observation.strip().splitlines()
    return next((line for line in lines if line.startswith("Error")), lines[0])

