"""The citation check after a Final Answer: each `[n]` claim against the text source n gave, no model needed.

Verdicts, one per claim and cited source:
- fabricated: n is not a source this task read;
- supported: the claim's checkable facts (facts.py) occur in the sources it cites;
- wrong_source: they occur, but only in another source the task read;
- unsupported: some occur in no source the task read;
- unchecked: the claim has nothing checkable (no number, date or quoted phrase).
Any URL in the answer that the task never read successfully: not_read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sources.facts import Fact, SourceText, claim_facts, keywords
from sources.language import across_languages
from sources.ledger import SourceLedger, normalize_url

SUPPORTED, UNSUPPORTED, WRONG_SOURCE, FABRICATED, NOT_READ, UNCHECKED = (
    "supported", "unsupported", "wrong_source", "fabricated", "not_read", "unchecked")
FAILING = frozenset({UNSUPPORTED, WRONG_SOURCE, FABRICATED, NOT_READ})
MARKER = re.compile(r"\[(\d{1,3}(?:\s*(?:[,;]|[-–])\s*\d{1,3})*)\]")
_URL = re.compile(r"https?://[^\s<>\"'`\]\[)]+")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_END = re.compile(r"""(?<=[.!?])["”’)]*(?:\s*\[[\d,;\s–-]+\])*(?=\s+["“(*_]*[A-Z0-9])""")
_ABBREVIATION = re.compile(r"(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Inc|Co|Ltd|vs|No|approx|e\.g|i\.e|U\.S|U\.K|Jan|Feb|"
                           r"Mar|Apr|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec|Gen|Gov|Sen|Rep|Prof|Lt|Col|Capt))\.$")


@dataclass
class Citation:
    """One cited claim (or one URL of the answer) and its verdict; model_verdict is --verify-claims model's."""

    n: int | None
    url: str | None
    claim: str
    verdict: str
    model_verdict: str | None = None

    def record(self) -> dict[str, Any]:
        """As results.jsonl holds it: {n, url, claim, verdict} (+ model_verdict when the model was asked)."""
        out: dict[str, Any] = {"n": self.n, "url": self.url, "claim": self.claim, "verdict": self.verdict}
        if self.model_verdict is not None:
            out["model_verdict"] = self.model_verdict
        return out


def claims(answer: str) -> list[str]:
    """The answer's claims: list items and sentences, each keeping the `[n]` markers that follow it."""
    out = []
    for line in answer.splitlines():
        line = _ITEM.sub("", line).strip()
        if not line or set(line) <= set("-|:# "):
            continue
        start = 0
        for m in _END.finditer(line):
            if _ABBREVIATION.search(line[start:m.start()].rstrip("\"”’)")):
                continue
            out.append(line[start:m.end()].strip())
            start = m.end()
        out.append(line[start:].strip())
    return [c for c in out if c]


def markers(claim: str) -> list[int]:
    """The source numbers a claim cites, in order (`[1]`, `[1, 3]`, `[2-4]`, `[1][2]`)."""
    found: list[int] = []
    for m in MARKER.finditer(claim):
        for part in re.split(r"\s*[,;]\s*", m.group(1)):
            ends = [int(x) for x in re.split(r"\s*[-–]\s*", part) if x]
            numbers = range(ends[0], ends[-1] + 1) if len(ends) == 2 and 0 < ends[1] - ends[0] < 20 else ends
            found += [n for n in numbers if n not in found]
    return found


def _is_reference_line(claim: str) -> bool:
    """`[1] Title — https://...`: an entry of the answer's own source list, not a claim."""
    return bool(re.match(r"^\[\d{1,3}\]", claim))


def check_citations(answer: str, ledger: SourceLedger) -> list[Citation]:
    """Every `[n]` claim of the answer with its verdict, then every URL in it the task never read."""
    texts: dict[int | None, SourceText] = {s.n: SourceText(s.text) for s in ledger.read_sources()}
    out: list[Citation] = []
    for claim in claims(answer):
        cited = markers(claim)
        if not cited or _is_reference_line(claim):
            continue
        bare = MARKER.sub(" ", claim)
        facts, anchors = claim_facts(bare), keywords(_URL.sub(" ", bare))
        known = [n for n in cited if n in texts]
        if (crossed := across_languages(bare, [texts[n].text for n in known])) is not None:  # sources/language.py
            facts, anchors = claim_facts(crossed[0]), crossed[1]
        verdict = _verdict(facts, anchors, known, texts) if known else FABRICATED
        if crossed is not None and verdict == UNSUPPORTED:  # a page in the claim's own language may hold it as written
            again = _verdict(claim_facts(bare), keywords(_URL.sub(" ", bare)), known, texts)
            verdict = again if again in (SUPPORTED, WRONG_SOURCE) else verdict
        for n in cited:
            source = ledger.number(n)
            out.append(Citation(n, source.url if source else None, claim, verdict if n in texts else FABRICATED))
    out += not_read(answer, ledger)
    return out


def _verdict(facts: list[Fact], anchors: set[str], cited: list[int], texts: Mapping[int | None, SourceText]) -> str:
    if not facts:
        return UNCHECKED
    needed = Counter(facts)  # a figure the claim states twice must occur twice

    def found(fact: Fact, numbers: Iterable[int | None]) -> bool:
        return sum(texts[n].count(fact, anchors) for n in numbers) >= needed[fact]

    in_cited = {f: found(f, cited) for f in needed}
    if all(in_cited.values()):
        return SUPPORTED
    if all(ok or found(f, texts) for f, ok in in_cited.items()):
        return WRONG_SOURCE
    return UNSUPPORTED


def not_read(answer: str, ledger: SourceLedger) -> list[Citation]:
    """A not_read citation for each URL written in the answer that no tool of the task read successfully."""
    out, seen = [], set()
    lines = claims(answer)
    for m in _URL.finditer(answer):
        url = m.group(0).rstrip(".,;:!?)]}>'\"”’*_`")
        key = normalize_url(url)
        if key in seen or ledger.was_read(url):
            continue
        seen.add(key)
        claim = next((c for c in lines if url in c), url)
        out.append(Citation(None, url, claim, NOT_READ))
    return out


def counts(citations: Iterable[Mapping[str, Any]]) -> dict[str, int]:
    """How many citations have each verdict."""
    out = dict.fromkeys((SUPPORTED, UNSUPPORTED, WRONG_SOURCE, FABRICATED, NOT_READ, UNCHECKED), 0)
    for c in citations:
        verdict = str(c.get("verdict"))
        out[verdict] = out.get(verdict, 0) + 1
    return out


def claims_line(citations: Iterable[Mapping[str, Any]]) -> str:
    """`N claims: S supported, U unsupported, W wrong source, F fabricated, R not read` (+ unchecked if any)."""
    c = counts(citations)
    line = (f"{sum(c.values())} claims: {c[SUPPORTED]} supported, {c[UNSUPPORTED]} unsupported, "
            f"{c[WRONG_SOURCE]} wrong source, {c[FABRICATED]} fabricated, {c[NOT_READ]} not read")
    return line + (f", {c[UNCHECKED]} unchecked" if c[UNCHECKED] else "")
