"""What a follow-up question carries of its conversation: earlier questions, answers and sources, within a budget."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.text import truncate_middle
from sources.ledger import titled

HISTORY_SHARE = 0.25  # of the memory's token budget: the most the earlier turns may take in the task's prompt
ANSWER_CHARS = 4_000  # the most one earlier answer takes, however much room there is


@dataclass
class PastTurn:
    """One earlier question of the conversation and how it was answered."""

    question: str
    answer: str | None
    sources: list[dict[str, Any]] = field(default_factory=list)  # {n, url, title, read} (sources/ledger.py)


def conversation_sources(turns: list[PastTurn]) -> list[dict[str, Any]]:
    """The sources read over the conversation, each once (first reading wins), numbered from 1 in reading order."""
    seen: dict[str, dict[str, Any]] = {}
    for number, turn in enumerate(turns, start=1):
        for source in turn.sources:
            url = str(source.get("url") or "")
            if url and source.get("read", True) and url not in seen:
                seen[url] = {"n": len(seen) + 1, "url": url, "title": source.get("title") or "", "turn": number}
    return list(seen.values())


def follow_up_prompt(question: str, turns: list[PastTurn], max_chars: int) -> str:
    """The task text of a follow-up: the newest earlier turns that fit in max_chars, the sources, the question.

    The oldest turns are left out first (with a note saying so); each answer is cut to ANSWER_CHARS.
    """
    if not turns:
        return question
    kept: list[str] = []
    room = max_chars
    for number in range(len(turns), 0, -1):
        turn = turns[number - 1]
        answer = truncate_middle(turn.answer or "(no answer)", ANSWER_CHARS)
        text = f"Question {number}: {turn.question.strip()}\nAnswer {number}: {answer.strip()}"
        if len(text) > room:
            break
        kept.insert(0, text)
        room -= len(text) + 2
    lines = ["This question follows earlier ones in the same conversation; use them to understand what it "
             "refers to (\"and in 2020?\" asks the earlier question again for 2020).", ""]
    if len(kept) < len(turns):
        lines += [f"[{len(turns) - len(kept)} earlier question(s) left out to stay within the context budget.]", ""]
    lines += ["\n\n".join(kept), ""]
    source_lines = [f"- {titled(str(s['title'] or ''), str(s['url']))}" for s in conversation_sources(turns)]
    shown = _fit_lines(source_lines, room - 200)
    if shown:
        lines += ["Sources already read in this conversation (read one again to quote it; files you saved "
                  "earlier are still in your workspace):", *shown, ""]
    lines += ["Current question:", question]
    return "\n".join(lines)


def _fit_lines(lines: list[str], room: int) -> list[str]:
    """The newest lines that fit in `room` characters, in their order, with a note for those left out."""
    out: list[str] = []
    for line in reversed(lines):
        if len(line) + 1 > room:
            out.insert(0, f"- ({len(lines) - len(out)} older source(s) not listed)")
            break
        out.insert(0, line)
        room -= len(line) + 1
    return out
