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
from collections import Counter
from dataclasses import dataclass

from sources.facts import Fact, SourceText, claim_facts, keywords
from sources.lexicon import about_the_source, unframed
from sources.reading import BREAK, Passages, Word, read_words

SUPPORTED, CONTRADICTED, UNSUPPORTED, UNCHECKED = "supported", "contradicted", "unsupported", "unchecked"
PASSAGE_CHARS = 600  # characters of the aligned passage a verdict carries
SPARE = 5  # one content word in this many may be a rewording the synonym table does not know
ALIGNED = 0.5  # the share of the claim's words its passage must hold before negations and directions are compared
SAME_PASSAGE = 0.8
WHOLE = 0.9  # the share of its sentence's words a claim restates to be compared with all of it


@dataclass(frozen=True)
class Judgement:
    """A verdict, why in a few words, and the passage of the source it was judged against."""

    verdict: str
    reason: str
    passage: str = ""


def judge(claim: str, source: Passages, facts: list[Fact] | None = None) -> Judgement:
    """The verdict of one claim (without its markers) against one source's text."""
    if not source.sentences:
        return Judgement(UNCHECKED, "no text of the source to check against")
    if about_the_source(claim):
        return Judgement(UNCHECKED, "it says what the source leaves out: nothing to check against it")
    words = read_words(unframed(claim), first_is_name=False)
    content = [w for w in words if w.key]
    facts = claim_facts(claim) if facts is None else facts
    if not content and not facts:
        return Judgement(UNCHECKED, "the claim says nothing to check")
    weights = {w.key: (2.0 if w.name or w.key[0] == "#" else 0.5 if w.direction else 1.0) for w in content}
    chosen, share = source.align(weights)
    passage = " … ".join(source.sentences[i] if j == 0 or i == chosen[j - 1] + 1 else "… " + source.sentences[i]
                         for j, i in enumerate(chosen)).replace("… …", "…")
    window = [w for i in chosen for w in source.words[i]]
    keys = {w.key for w in window if w.key}
    plain = [w for w in content if w.key[0] != "#" and not w.direction]
    plain_share = sum(w.key in keys for w in plain) / len(plain) if len(plain) >= 3 else 0.0
    case = _Case(claim, words, content, facts, source, window, keys, len(chosen) == 1, share, plain_share, passage)
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
    keys: set[str]  # the window's word keys
    one: bool  # the window is one sentence
    share: float  # of the claim's weighted words, in the window
    plain_share: float  # of its words other than figures and directions
    passage: str


Found = tuple[str, str] | None


def _names(c: _Case) -> Found:
    missing = [w.text for w in c.content if w.name and not w.direction and not c.source.names.has(w.text)]
    return (UNSUPPORTED, f"\u2018{missing[0]}\u2019 is nowhere in the source") if missing else None


def _figures(c: _Case) -> Found:
    if not c.facts:
        return None
    anchors = keywords(c.claim)
    here = SourceText(c.passage)
    for fact, needed in Counter(c.facts).items():
        if c.source.facts.count(fact, anchors) >= needed and (not c.one or c.plain_share < SAME_PASSAGE
                                                             or here.holds(fact, set())
                                                             or not _others(fact, c.passage)):
            continue
        other = _others(fact, c.passage)
        if other:
            return CONTRADICTED, f"says {_short(fact.text)}, the source says {_short(other)}"
        return UNSUPPORTED, f"{_short(fact.text)} is nowhere in the source"
    return None


def _short(text: str, limit: int = 60) -> str:
    """A figure or quotation as a reason quotes it: on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _others(fact: Fact, here: str) -> str:
    """A figure or date of the passage of the same kind (and unit) as the fact, as the passage writes it."""
    for other in claim_facts(here):
        if other.kind == fact.kind and other.unit == fact.unit and not _is_year(other, fact) and \
                (other.value != fact.value or other.date != fact.date or other.phrase != fact.phrase):
            return other.text
    return ""


def _is_year(other: Fact, fact: Fact) -> bool:
    """A year in the passage is no other spelling of a claim's figure that is not a year."""
    return fact.kind == "number" and other.value is not None and fact.value is not None and not other.unit \
        and 1000 <= other.value <= 2100 and not 1000 <= fact.value <= 2100


def _span(words: list[Word], keys: set[str], before: int = 3, after: int = 3) -> list[Word]:
    """The run of words around the densest stretch of the given keys (gaps up to 8 words), widened by `before`
    and `after` words within its clause: where a negation or direction belongs to what they share."""
    at = [i for i, w in enumerate(words) if w.key and w.key in keys]
    if not at:
        return []
    runs: list[list[int]] = [[at[0]]]
    for i in at[1:]:
        if i - runs[-1][-1] > 8:
            runs.append([])
        runs[-1].append(i)
    run = max(runs, key=len)
    start, end = run[0], run[-1]
    for _ in range(before):
        if start > 0 and words[start - 1] is not BREAK:
            start -= 1
    for _ in range(after):
        if end + 1 < len(words) and words[end + 1] is not BREAK:
            end += 1
    return words[start:end + 1]


def _negation(c: _Case) -> Found:
    """More negations in the claim than its passage has on the words they share, or fewer ("did not carry"
    against "carried"; a "not" on a word of another clause of the passage does not count)."""
    if c.share < ALIGNED:
        return None
    shared = {w.key for w in c.content} & c.keys
    whole = c.one and len(shared) >= WHOLE * len(c.keys)  # it restates a whole sentence: count in all of both
    said = [w.text for w in c.words if w.negation] if whole else _negations(c.words, shared)
    there = [w.text for w in c.window if w.negation] if whole else _negations(c.window, shared)
    if len(said) > len(there):  # "did not" against "did"; "is not no end" against "is no end"
        return CONTRADICTED, f"says \u2018{said[0]}\u2019, the source does not"
    if len(there) > len(said):
        return CONTRADICTED, f"the source says \u2018{there[0]}\u2019, the claim does not"
    return None


def _negations(words: list[Word], keys: set[str]) -> list[str]:
    """The negations that bear on one of these keys: the next content word within six, in the same clause."""
    out = []
    for i, w in enumerate(words):
        if w.negation:
            bears = next((x for x in words[i + 1:i + 7] if x.key or x is BREAK), None)
            if bears is not None and bears.key in keys:
                out.append(w.text)
    return out


def _direction(c: _Case) -> Found:
    """A direction the claim says more often than its passage, where the passage says its opposite more often."""
    if c.share < ALIGNED:
        return None
    shared = {w.key for w in c.content} & c.keys
    mine = [w for w in _span(c.words, shared, 6, 6) if w.direction]
    span = [w for w in _span(c.window, shared | {w.key for w in mine}, 6, 6) if w.direction]
    said: Counter[tuple[str, int]] = Counter(w.direction for w in mine if w.direction)
    there: Counter[tuple[str, int]] = Counter(w.direction for w in span if w.direction)
    for (axis, sign), n in said.items():
        if n > there[(axis, sign)] and there[(axis, -sign)] > said[(axis, -sign)]:
            claim_word = next(w.text for w in mine if w.direction == (axis, sign))
            source_word = next(w.text for w in span if w.direction == (axis, -sign))
            return CONTRADICTED, f"says \u2018{claim_word}\u2019, the source says \u2018{source_word}\u2019"
    return None


def _words(c: _Case) -> Found:
    plain = [w for w in c.content if w.key[0] != "#"]
    missing = [w.text for w in plain if w.key not in c.source.keys]
    if len(missing) > math.floor(len(plain) / SPARE):
        return UNSUPPORTED, f"\u2018{missing[0]}\u2019 is nowhere in the source"
    return None


