"""--verify-claims model: the model reads each cited claim beside the best-matching passage of its source.

Its verdict (supported, unsupported, unclear; skipped when a cap, the deadline or an error stopped it) is
recorded beside the deterministic one, never instead of it. `ask` is the task's own model call, so these
calls count toward the task's cost and spend caps.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from core.chat import Message
from core.errors import LLMError, LLMFatalError, TaskDeadlineExceeded
from sources.check import FABRICATED, MARKER, NOT_READ, Citation
from sources.facts import SourceText, claim_facts, keywords
from sources.ledger import SourceLedger

PASSAGE_CHARS = 1200
PROMPT = """You check whether a passage of a source supports a claim that cites it.

Source: {header}
Passage:
\"\"\"
{passage}
\"\"\"

Claim: {claim}

Does the passage state every fact of the claim (numbers, dates, names, quotations)? Reply with one word:
SUPPORTED or UNSUPPORTED."""


def passages(text: str, size: int = PASSAGE_CHARS) -> list[str]:
    """The text cut into passages of about `size` characters along paragraph breaks (long ones split)."""
    out: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        for start in range(0, max(len(paragraph), 1), size):
            piece = paragraph[start:start + size].strip()
            if not piece:
                continue
            if current and len(current) + len(piece) > size:
                out.append(current)
                current = ""
            current = f"{current}\n\n{piece}" if current else piece
    return out + ([current] if current else [])


def best_passage(claim: str, text: str) -> str:
    """The passage of `text` holding most of the claim's facts, then most of its words."""
    facts, words = claim_facts(claim), keywords(claim)
    best, best_score = "", (-1, -1)
    for passage in passages(text):
        indexed = SourceText(passage)
        score = (sum(indexed.holds(f, set()) for f in facts), len(words & keywords(passage)))
        if score > best_score:
            best, best_score = passage, score
    return best


def model_verdict(reply: str) -> str:
    """supported / unsupported / unclear from the model's reply."""
    first = re.search(r"\b(unsupported|not supported|supported)\b", reply.lower())
    if first is None:
        return "unclear"
    return "supported" if first.group(1) == "supported" else "unsupported"


def verify_citations(citations: list[Citation], ledger: SourceLedger, ask: Callable[[list[Message]], str]) -> None:
    """Set model_verdict on each citation of a source the task read; stops (skipped) at a cap or the deadline."""
    stopped = False
    for citation in citations:
        source = ledger.number(citation.n) if citation.n is not None else None
        if source is None or citation.verdict in (FABRICATED, NOT_READ):
            continue
        if stopped:
            citation.model_verdict = "skipped"
            continue
        claim = MARKER.sub("", citation.claim).strip()
        prompt = PROMPT.format(header=source.header(), passage=best_passage(claim, source.text), claim=claim)
        try:
            citation.model_verdict = model_verdict(ask([{"role": "user", "content": prompt}]))
        except LLMFatalError:
            raise
        except (LLMError, TaskDeadlineExceeded):  # a spend cap, the deadline, a failed call: the answer stands
            citation.model_verdict, stopped = "skipped", True
