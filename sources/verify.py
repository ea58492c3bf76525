"""A judge model beside the model-free check: --judge-model MODEL, or --verify-claims model (the task's own).

The model reads each cited claim the model-free check (check.py) calls supported or leaves unchecked, beside
the passage of its source that check judged it against, and says SUPPORTED, CONTRADICTED or UNSUPPORTED.
Its verdict (or unclear; skipped when a cap, the deadline or an error stopped it) is recorded beside the
model-free one, never instead of it; claims that check already fails are not sent (they are flagged either
way). `ask` is the caller's model call, so these calls count toward the task's cost and spend caps.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from core.chat import Message
from core.errors import LLMError, LLMFatalError, TaskDeadlineExceeded
from sources.check import MARKER, SUPPORTED, UNCHECKED, Citation
from sources.ledger import SourceLedger

PROMPT = """You check whether a passage of a source supports a claim that cites it.

Source: {header}
Passage:
\"\"\"
{passage}
\"\"\"

Claim: {claim}

Does the passage state what the claim says (its names, numbers, dates, quotations, and who did what, in which
direction, with the same negation)? Reply with one word: SUPPORTED, CONTRADICTED (the passage says otherwise)
or UNSUPPORTED (the passage does not say it)."""
JUDGED = (SUPPORTED, UNCHECKED)  # the model-free verdicts a judge model is asked about


def model_verdict(reply: str) -> str:
    """supported / contradicted / unsupported / unclear from the model's reply."""
    first = re.search(r"\b(unsupported|not supported|contradicted|contradicts|supported)\b", reply.lower())
    if first is None:
        return "unclear"
    word = first.group(1)
    return "supported" if word == "supported" else "contradicted" if word.startswith("contradict") else "unsupported"


def verify_citations(citations: list[Citation], ledger: SourceLedger, ask: Callable[[list[Message]], str]) -> None:
    """Set model_verdict on each supported or unchecked citation of a source the task read; stops (skipped) at a
    cap or the deadline."""
    stopped = False
    for citation in citations:
        source = ledger.number(citation.n) if citation.n is not None else None
        if source is None or citation.verdict not in JUDGED:
            continue
        if stopped:
            citation.model_verdict = "skipped"
            continue
        claim = " ".join(re.sub(r"\s*" + MARKER.pattern, "", citation.claim).split())
        prompt = PROMPT.format(header=source.header(), passage=citation.passage or source.text[:1200], claim=claim)
        try:
            citation.model_verdict = model_verdict(ask([{"role": "user", "content": prompt}]))
        except LLMFatalError:
            raise
        except (LLMError, TaskDeadlineExceeded):  # a spend cap, the deadline, a failed call: the answer stands
            citation.model_verdict, stopped = "skipped", True
