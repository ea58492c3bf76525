"""The running summary older steps are folded into: a step as the memory keeps it (Turn), as the summarizer reads
it, the groups a fold is summarized in, and the summarization prompt. prompt/memory.py decides when to fold."""

from __future__ import annotations

from dataclasses import dataclass

from core.chat import Message
from core.text import truncate_middle

OBSERVATION_PREFIX = "Observation: "

SUMMARY_SYSTEM = """You keep the working notes of a research assistant that is partway through a task.
You are not the assistant: do not call tools, do not answer the task, and never write "Thought:", \
"Action:" or "Final Answer:".
Merge the previous notes and the new steps into one updated set of notes that lets the assistant carry on \
without the original steps. Keep every fact that may matter with its exact figures, names and dates, and \
the source (URL or file) it came from. Never invent anything. Write plain text under these headings:
Facts found: each fact with its source (URL or workspace file).
Sources visited: URLs and files already read or tried, so they are not fetched again.
Failed attempts: what failed and why.
Still to find: what the task still needs.
Partial answer: the answer so far, if any."""


class SummaryRejectedError(Exception):
    """A summary came back empty or larger than its share of the budget (kept as data, never raised)."""

    def __init__(self, reason: str, tokens: int = 0) -> None:
        super().__init__(reason)
        self.tokens = tokens


@dataclass
class Turn:
    """One step as the model sees it: its completion and the observation (full text kept for saving)."""

    step: int
    assistant: str
    observation: str
    full: str
    saved: str | None = None  # workspace-relative path of the saved full observation


def step_text(turn: Turn, room: int) -> str:
    """A step as the summarizer reads it: the full observation, cut only to fit its prompt."""
    head = f"### Step {turn.step}\n{turn.assistant}\n{OBSERVATION_PREFIX}"
    tail = f"\n(full text saved in {turn.saved})" if turn.saved else ""
    return head + truncate_middle(turn.full, max(room - len(head) - len(tail), 1)) + tail


def chunks(turns: list[Turn], room: int) -> list[list[Turn]]:
    """Split the steps to fold into groups whose steps fit in `room` characters of a summarization prompt."""
    groups: list[list[Turn]] = []
    used = room
    for turn in turns:
        size = min(len(step_text(turn, room)), room)
        if used + size > room:
            groups.append([])
            used = 0
        groups[-1].append(turn)
        used += size
    return groups


def summary_messages(task: str, summary: str, turns: list[Turn], room: int, summary_tokens: int) -> list[Message]:
    """The summarization call: the task, the notes so far and the steps to fold in, at most about summary_tokens."""
    steps = "\n\n".join(step_text(t, room) for t in turns)
    words = int(summary_tokens * 0.6)
    user = (f"## Task\n{task}\n\n## Previous notes\n{summary or '(none yet)'}\n\n"
            f"## New steps to fold in\n{steps}\n\n## Instructions\nWrite the updated notes, at most "
            f"about {words} words. Keep what the previous notes say unless the new steps correct it.")
    return [{"role": "system", "content": SUMMARY_SYSTEM}, {"role": "user", "content": user}]
