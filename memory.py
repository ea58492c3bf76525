"""What the model sees each step: token budget, observation truncation, the message history."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from llm import Message


def truncate_middle(text: str, max_chars: int, note: str = "") -> str:
    """Keep the head and tail of text within max_chars, with a marker saying how much was cut.

    This is the one truncation helper: tools and memory all use it.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    marker_len = 120 + len(note)
    keep = max(max_chars - marker_len, 0)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    lines_cut = text.count("\n", head, len(text) - tail)
    marker = f"\n\n[... {cut:,} characters ({lines_cut:,} lines) cut{'; ' + note if note else ''} ...]\n\n"
    return text[:head] + marker + (text[len(text) - tail:] if tail else "")


@dataclass
class Turn:
    """One step as the model sees it: its own completion and the observation it got back."""

    assistant: str
    observation: str


class Memory:
    """Full history with observation truncation (the summarizing memory replaces this class)."""

    def __init__(self, budget_tokens: int = 32_000, workspace: Path | None = None,
                 observation_chars: int = 20_000) -> None:
        self.budget_tokens = budget_tokens
        self.workspace = workspace
        self.observation_chars = observation_chars
        self.turns: list[Turn] = []

    def add(self, step_number: int, assistant: str, observation: str) -> str:
        """Record a step; returns the observation text as the model will see it."""
        shown = self.fit_observation(step_number, observation)
        self.turns.append(Turn(assistant, shown))
        return shown

    def fit_observation(self, step_number: int, observation: str) -> str:
        """Cut an oversized observation, saving the full text in the workspace first."""
        if len(observation) <= self.observation_chars:
            return observation
        note = ""
        if self.workspace is not None:
            rel = Path("observations") / f"step-{step_number:02d}.txt"
            path = self.workspace / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(observation, encoding="utf-8")
            note = f"full text saved to {rel.as_posix()}; read it with read_file"
        return truncate_middle(observation, self.observation_chars, note)

    def messages(self, system: str, task: str) -> list[Message]:
        """The prompt for the next model call."""
        out: list[Message] = [{"role": "system", "content": system}, {"role": "user", "content": task}]
        for turn in self.turns:
            out.append({"role": "assistant", "content": turn.assistant})
            out.append({"role": "user", "content": f"Observation: {turn.observation}"})
        return out
