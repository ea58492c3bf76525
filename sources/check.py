"""The citation check after a Final Answer: each `[n]` claim against the text source n gave, no model needed.

Verdicts, one per claim and cited source, each with a reason in a few words and the passage it was judged
against (meaning.py aligns the claim with it):
- fabricated: n is not a source this task read;
- supported: its names, figures, dates and words are in the passage, read in order (which does not prove it
  true): the same polarity and direction, the same doer;
- contradicted: the passage says otherwise about the same thing (a negation added or dropped, a direction
  reversed, another figure of the same thing); when unsure, unsupported;
- wrong_source: the cited source does not hold it, another source the task read does;
- unsupported: a name, figure, date or content word of it is nowhere in the source;
- unchecked: the source gave no text (or the claim says nothing to check, or remarks on what it leaves out).
Any URL in the answer that the task never read successfully: not_read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sources.facts import Fact, claim_facts
from sources.language import across_languages
from sources.ledger import SourceLedger, normalize_url
from sources.lexicon import unquoted
from sources.meaning import CONTRADICTED, SUPPORTED, UNCHECKED, UNSUPPORTED, Judgement, judge
from sources.pages import page_of
from sources.reading import ABBREVIATION, joined, passages
from sources.works import About, about, as_cited

WRONG_SOURCE, FABRICATED, NOT_READ = "wrong_source", "fabricated", "not_read"
VERDICTS = (SUPPORTED, CONTRADICTED, UNSUPPORTED, WRONG_SOURCE, FABRICATED, NOT_READ, UNCHECKED)
FAILING = frozenset({CONTRADICTED, UNSUPPORTED, WRONG_SOURCE, FABRICATED, NOT_READ})
MARKER = re.compile(r"\[(\d{1,3}(?:\s*(?:[,;]|[-–])\s*\d{1,3})*)\]")
_URL = re.compile(r"https?://[^\s<>\"'`\]\[)]+")
_ITEM = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_END = re.compile(r"""(?<=[.!?])["”’)]*(?:\s*\[[\d,;\s–-]+\])*(?=\s+["“(*_]*[A-Z0-9])""")


@dataclass
class Citation:
    """One cited claim (or one URL of the answer), its verdict, why, and the passage it was judged against;
    model_verdict is the judge model's (--judge-model, --verify-claims model); page is the page of a paged source
    (a PDF read with its page markers) the passage is on; retracted says what marks the cited paper retracted."""

    n: int | None
    url: str | None
    claim: str
    verdict: str
    model_verdict: str | None = None
    reason: str = ""
    passage: str = ""
    page: int | None = None
    retracted: str = ""

    def record(self) -> dict[str, Any]:
        """As results.jsonl holds it: {n, url, claim, verdict} (+ reason, passage, model_verdict, page, retracted
        when there)."""
        out: dict[str, Any] = {"n": self.n, "url": self.url, "claim": self.claim, "verdict": self.verdict}
        out |= {k: v for k, v in (("reason", self.reason), ("passage", self.passage),
                                  ("model_verdict", self.model_verdict), ("page", self.page),
                                  ("retracted", self.retracted)) if v}
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
            if ABBREVIATION.search(line[start:m.start()].rstrip("\"”’)")):
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
    texts = {s.n: s.text for s in ledger.read_sources() if s.n is not None}
    abouts = {s.n: about(s.title, s.url, s.work) for s in ledger.read_sources() if s.n is not None}
    out: list[Citation] = []
    for claim in claims(answer):
        cited = markers(claim)
        if not cited or _is_reference_line(claim):
            continue
        bare = _URL.sub(" ", MARKER.sub(" ", claim))
        known = [n for n in cited if n in texts]
        found = verdict(bare, known, texts, abouts) if known else None
        for n in cited:
            source = ledger.number(n)
            j = found if found is not None and n in texts else Judgement(FABRICATED, f"[{n}] is no source this task "
                                                                                     "read")
            out.append(Citation(n, source.url if source else None, claim, j.verdict, reason=j.reason,
                                passage=j.passage, page=page_of(texts.get(n, ""), j.passage, bare),
                                retracted=source.retracted if source else ""))
    out += not_read(answer, ledger)
    return out


def verdict(claim: str, cited: list[int], texts: Mapping[int, str],
            abouts: Mapping[int, About] | None = None) -> Judgement:
    """The claim (without markers) against the sources it cites, read as one; an unsupported or contradicted
    claim that another source the task read supports on its own is wrong_source. A claim in another language
    than its sources (sources/language.py) is judged on its names, figures and dates only; one written wholly inside
    quotation marks is judged without them. `abouts`: what each source is besides its text (works.py: a paper's
    authors and year, a title, a file name), which a claim may name."""
    claim = unquoted(claim)
    spare: frozenset[str] = frozenset()
    if abouts:
        named = as_cited(claim, [abouts[n] for n in cited if n in abouts],
                         {n: a for n, a in abouts.items() if n not in cited})
        if named.verdict:
            return Judgement(named.verdict, named.reason)
        claim, spare = named.claim, named.spare
    if (crossed := across_languages(claim, [texts[n] for n in cited])) is None:
        return _meaning(claim, cited, texts, spare)
    found = _across(claim_facts(crossed[0]), crossed[1], cited, texts)
    if found.verdict != UNSUPPORTED:
        return found
    again = _meaning(claim, cited, texts, spare)  # a page in the claim's own language may hold it as written
    return again if again.verdict in (SUPPORTED, WRONG_SOURCE) else found


def _across(facts: list[Fact], anchors: set[str], cited: list[int], texts: Mapping[int, str]) -> Judgement:
    """A claim in another language than its source: its figures and dates, near its names, in the source."""
    if not facts:
        return Judgement(UNCHECKED, "another language than the source, and no figure or date to check")
    needed = Counter(facts)  # a figure the claim states twice must occur twice

    def found(fact: Fact, numbers: Iterable[int]) -> bool:  # each source's facts read once, for all its claims
        return sum(passages(texts[n]).facts.count(fact, anchors) for n in numbers) >= needed[fact]

    in_cited = {f: found(f, cited) for f in needed}
    if all(in_cited.values()):
        return Judgement(SUPPORTED, "judged on its names, figures and dates (another language than the source)")
    other = next((n for n in texts if n not in cited and all(found(f, [n]) for f in needed)), None)
    if other is not None:
        return Judgement(WRONG_SOURCE, f"its figures are in [{other}], not in the source it cites")
    return Judgement(UNSUPPORTED, "a figure or date of it is not in the source (judged across languages)")


def _meaning(claim: str, cited: list[int], texts: Mapping[int, str], spare: frozenset[str] = frozenset()) -> Judgement:
    """The model-free meaning check (meaning.py) against the cited sources, then the others for wrong_source."""
    facts = claim_facts(claim)
    found = judge(claim, passages(texts[cited[0]]) if len(cited) == 1 else joined(texts[n] for n in cited), facts,
                  spare)
    if found.verdict not in (UNSUPPORTED, CONTRADICTED):
        return found
    for n, text in texts.items():
        if n not in cited:
            other = judge(claim, passages(text), facts)
            if other.verdict == SUPPORTED:
                return Judgement(WRONG_SOURCE, f"it is in [{n}], not in the source it cites", other.passage)
    return found


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
    out = dict.fromkeys(VERDICTS, 0)
    for c in citations:
        verdict = str(c.get("verdict"))
        out[verdict] = out.get(verdict, 0) + 1
    return out


def claims_line(citations: Iterable[Mapping[str, Any]]) -> str:
    """`N claims: S supported, U unsupported, W wrong source, F fabricated, R not read` (+ C contradicted after
    supported, and unchecked, when there are any)."""
    c = counts(citations)
    contradicted = f"{c[CONTRADICTED]} contradicted, " if c[CONTRADICTED] else ""
    line = (f"{sum(c.values())} claims: {c[SUPPORTED]} supported, {contradicted}{c[UNSUPPORTED]} unsupported, "
            f"{c[WRONG_SOURCE]} wrong source, {c[FABRICATED]} fabricated, {c[NOT_READ]} not read")
    return line + (f", {c[UNCHECKED]} unchecked" if c[UNCHECKED] else "")
