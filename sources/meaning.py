"""What a claim says, judged against the passage of its source that best matches it; no model needed.

The source is cut into sentences and indexed by content word (lexicon.py: a light stem, a synonym's group,
a direction word's axis and sign). A claim is aligned with the one sentence, or two neighbouring ones, that
hold most of its words; then, in that order:
- a name of the claim that is nowhere in the source: unsupported;
- a figure or date that is not in the source: contradicted when the passage gives another one of the same
  kind, else unsupported (figures are read by facts.py);
- a negation the passage lacks, or one it has that the claim lacks, around the words they share: contradicted;
- a direction (rose/fell, more/less, before/after, largest/smallest, won/lost ...) whose opposite alone is in
  the passage: contradicted;
- more content words nowhere in the source than a rewording explains: unsupported;
- else supported. Only a source without text leaves a claim unchecked.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from sources.facts import UNIT_WORDS, Fact, SourceText, claim_facts, fold, keywords
from sources.lexicon import DIRECTIONS, NEGATIONS, STOP, SYNONYMS, open_contractions, stem

SUPPORTED, CONTRADICTED, UNSUPPORTED, UNCHECKED = "supported", "contradicted", "unsupported", "unchecked"
PASSAGE_CHARS = 600  # characters of the aligned passage a verdict carries
_TOKEN = re.compile(r"[^\W\d_]+|\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"”’)\]]*\s+(?=[\"“(\[]?[A-Z0-9])|\n+")
SPARE = 5  # one content word in this many may be a rewording the synonym table does not know
ALIGNED = 0.5  # the share of the claim's words its passage must hold before negations and directions are compared
SAME_PASSAGE = 0.8  # ... and before a figure missing from a passage that gives others is called changed


@dataclass(frozen=True)
class Word:
    """One word of a text as the check reads it: `key` is what it matches on ("" for a function word)."""

    text: str
    key: str
    name: bool = False
    negation: bool = False
    direction: tuple[str, int] | None = None


@dataclass(frozen=True)
class Judgement:
    """A verdict, why in a few words, and the passage of the source it was judged against."""

    verdict: str
    reason: str
    passage: str = ""


def read_words(text: str, first_is_name: bool = True) -> list[Word]:
    """The words of a text (contractions opened), each with its key, negation or direction."""
    out = []
    for i, m in enumerate(_TOKEN.finditer(open_contractions(fold(text)))):
        w = m.group(0)
        lower = w.casefold()
        if lower in NEGATIONS:
            out.append(Word(w, "", negation=True))
        elif lower in DIRECTIONS:
            axis, sign = DIRECTIONS[lower]
            out.append(Word(w, f"{axis}{'+' if sign > 0 else '-'}", direction=(axis, sign)))
        elif w[0].isdigit():
            out.append(Word(w, "#" + w.replace(",", "")))
        elif lower in STOP or lower in UNIT_WORDS or len(lower) < 2 or len(lower) < 3 and not w.isupper():
            out.append(Word(w, ""))
        else:
            key = SYNONYMS.get(lower) or SYNONYMS.get(stem(lower)) or stem(lower)
            out.append(Word(w, key, name=w[0].isupper() and (i > 0 or first_is_name)))
    return out


class Passages:
    """A source's text cut into sentences, indexed by word key, with its facts (facts.SourceText)."""

    def __init__(self, text: str) -> None:
        self.facts = SourceText(text)
        self.sentences = [s.strip() for s in _SENTENCE_END.split(self.facts.text) if s and s.strip()]
        self.words = [read_words(s) for s in self.sentences]
        self.keysets = [{w.key for w in ws if w.key} for ws in self.words]
        self.index: dict[str, list[int]] = {}
        for i, keys in enumerate(self.keysets):
            for key in keys:
                self.index.setdefault(key, []).append(i)
        self.keys = set(self.index)

    def align(self, weights: dict[str, float]) -> tuple[int, int, float]:
        """The sentence range [start, end) holding most of the weighted keys, and the share it holds."""
        hits: Counter[int] = Counter()
        for key, weight in weights.items():
            for i in self.index.get(key, ()):
                hits[i] += weight
        if not hits:
            return 0, 0, 0.0
        best, rank = (0, 0, 0.0), (-1.0, 0, 0)
        for i, _ in hits.most_common(12):
            for start, end in ((i, i + 1), (i - 1, i + 1), (i, i + 2)):
                if start < 0 or end > len(self.sentences):
                    continue
                keys = set().union(*self.keysets[start:end])
                score = sum(w for k, w in weights.items() if k in keys)
                if (score, start - end, -start) > rank:  # most words, then one sentence, then the first
                    best, rank = (start, end, score), (score, start - end, -start)
        start, end, score = best
        return start, end, score / max(sum(weights.values()), 1e-9)


@lru_cache(maxsize=64)
def passages(text: str) -> Passages:
    """The indexed text (kept for the next claims that cite the same text)."""
    return Passages(text)


def judge(claim: str, source: Passages, facts: list[Fact] | None = None) -> Judgement:
    """The verdict of one claim (without its markers) against one source's text."""
    if not source.sentences:
        return Judgement(UNCHECKED, "no text of the source to check against")
    words = read_words(claim, first_is_name=False)
    content = [w for w in words if w.key]
    facts = claim_facts(claim) if facts is None else facts
    if not content and not facts:
        return Judgement(UNCHECKED, "the claim says nothing to check")
    weights = {w.key: (2.0 if w.name or w.key[0] == "#" else 1.0) for w in content}
    start, end, share = source.align(weights)
    passage = " ".join(source.sentences[start:end])
    case = _Case(claim, words, content, facts, source, [w for ws in source.words[start:end] for w in ws], share,
                 passage)
    for check in (_names, _figures, _negation, _direction, _words):
        found = check(case)
        if found is not None:
            return Judgement(found[0], found[1], passage[:PASSAGE_CHARS])
    return Judgement(SUPPORTED, "its names, figures and words are in the passage" if share >= SAME_PASSAGE
                     else "its names, figures and words are in the source", passage[:PASSAGE_CHARS])


@dataclass
class _Case:
    """One claim against one source: its words, facts, the aligned passage and the share of words it holds."""

    claim: str
    words: list[Word]
    content: list[Word]
    facts: list[Fact]
    source: Passages
    window: list[Word]
    share: float
    passage: str


Found = tuple[str, str] | None


def _names(c: _Case) -> Found:
    missing = [w.text for w in c.content if w.name and w.key not in c.source.keys and not w.direction]
    return (UNSUPPORTED, f"\u2018{missing[0]}\u2019 is nowhere in the source") if missing else None


def _figures(c: _Case) -> Found:
    anchors = keywords(c.claim)
    here = SourceText(c.passage)
    for fact, needed in Counter(c.facts).items():
        if c.source.facts.count(fact, anchors) >= needed and (c.share < SAME_PASSAGE or here.holds(fact, set())
                                                             or not _others(fact, c.passage)):
            continue
        other = _others(fact, c.passage)
        if other:
            return CONTRADICTED, f"says {fact.text}, the source says {other}"
        return UNSUPPORTED, f"{fact.text} is nowhere in the source"
    return None


def _others(fact: Fact, here: str) -> str:
    """A figure or date of the passage of the same kind (and unit) as the fact, as the passage writes it."""
    for other in claim_facts(here):
        if other.kind == fact.kind and other.unit == fact.unit and not _is_year(other, fact):
            return other.text
    return ""


def _is_year(other: Fact, fact: Fact) -> bool:
    """A year in the passage is no other spelling of a claim's figure that is not a year."""
    return fact.kind == "number" and other.value is not None and fact.value is not None and not other.unit \
        and 1000 <= other.value <= 2100 and not 1000 <= fact.value <= 2100


def _span(content: list[Word], window: list[Word]) -> list[Word]:
    """The part of the passage around the words it shares with the claim (a clause of a longer sentence)."""
    keys = {w.key for w in content}
    at = [i for i, w in enumerate(window) if w.key and w.key in keys]
    return window[max(0, at[0] - 3): at[-1] + 3] if at else []


def _negation(c: _Case) -> Found:
    if c.share < ALIGNED:
        return None
    said = [w.text for w in c.words if w.negation]
    there = [w.text for w in _span(c.content, c.window) if w.negation]
    if said and not there:
        return CONTRADICTED, f"says \u2018{said[0]}\u2019, the source does not"
    if there and not said:
        return CONTRADICTED, f"the source says \u2018{there[0]}\u2019, the claim does not"
    return None


def _direction(c: _Case) -> Found:
    if c.share < ALIGNED:
        return None
    span = _span(c.content, c.window)
    there = {w.direction: w.text for w in span if w.direction}
    for w in c.content:
        if w.direction and w.direction not in there:
            opposite = there.get((w.direction[0], -w.direction[1]))
            if opposite:
                return CONTRADICTED, f"says \u2018{w.text}\u2019, the source says \u2018{opposite}\u2019"
    return None


def _words(c: _Case) -> Found:
    plain = [w for w in c.content if w.key[0] != "#"]
    missing = [w.text for w in plain if w.key not in c.source.keys]
    if len(missing) > math.floor(len(plain) / SPARE):
        return UNSUPPORTED, f"\u2018{missing[0]}\u2019 is nowhere in the source"
    return None


def joined(texts: Iterable[str]) -> Passages:
    """The texts of several cited sources read as one (a claim citing [1][2] may draw on both)."""
    return passages("\n\n".join(texts))
