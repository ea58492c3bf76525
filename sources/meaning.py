"""What a claim says, judged against the passage of its source that best matches it; no model needed.

The source is cut into sentences and indexed by content word (reading.py: a light stem, a synonym's group,
a direction word's axis and sign). A claim, without a summary's framing ("The passage discusses ..."), is
aligned with the one sentence, or two neighbouring ones, that hold most of its words; then, in that order:
- a name of the claim that the source writes in no spelling (names.py: case, accents, demonyms, initials both
  ways: "US" for "United States"): unsupported;
- a figure or date that is not in the source: contradicted when the passage gives another one of the same
  kind with the same words around it, else unsupported (figures are read by facts.py);
- a negation on words the passage says plainly, or one the passage has on words the claim says plainly
  (scope.py), unless the other side negates the same words of the same one (a claim's, in any sentence of the
  source): contradicted;
- a direction (rose/fell, more/less, before/after, largest/smallest, won/lost ...) whose opposite alone the
  passage gives about the same thing, in a claim that does not say both: contradicted;
- a name doing what, in the passage, only another name does (the same past verb): unsupported;
- more content words nowhere in the source than a rewording explains (lexicon.py's table; WordNet's synonyms
  and the nouns and verbs it derives, from the system's database or the table of its commonest words shipped in
  sources/; a place's kind before its name, "the city of Milan", counts for nothing): unsupported;
- else supported: its names, figures and words are in the passage, read in order (not a proof that it is
  true). Only a source without text, or a claim saying nothing checkable, leaves it unchecked.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from sources.facts import Fact, SourceText, claim_facts, context, keywords, placed_facts
from sources.lexicon import KIND_NAMES, PLACE_KINDS, ROLES, about_the_source, unframed
from sources.names import NameForms, initialism
from sources.reading import Passages, Word, key_of, read_words
from sources.scope import negations, polarity, reversed_direction, swapped_role
from sources.spelling import fold, plain
from sources.wordnet import synonyms

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


def judge(claim: str, source: Passages, facts: list[Fact] | None = None,
          spare: frozenset[str] = frozenset()) -> Judgement:
    """The verdict of one claim (without its markers) against one source's text; the word keys in `spare` are
    not required of it (what the source is: its title, authors ..., works.py)."""
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
    case = _Case(claim, words, content, facts, source, chosen, window, keys, share, plain_share, passage, spare)
    for check in (_names, _figures, _negation, _direction, _roles, _words):
        found = check(case)
        if found is not None:
            return Judgement(found[0], found[1], passage[:PASSAGE_CHARS])
    where = "in the passage, read in order" if share >= SAME_PASSAGE else "in the source"
    return Judgement(SUPPORTED, f"its names, figures and words are {where}", passage[:PASSAGE_CHARS])


@dataclass
class _Case:
    """One claim against one source: its words, facts, the aligned passage and the share of words it holds."""

    claim: str
    words: list[Word]
    content: list[Word]
    facts: list[Fact]
    source: Passages
    chosen: list[int]  # the sentences of the aligned passage
    window: list[Word]
    keys: set[str]  # the window's word keys
    share: float  # of the claim's weighted words, in the window
    plain_share: float  # of its words other than figures and directions
    passage: str
    spare: frozenset[str] = frozenset()  # word keys not required: what the source is (works.py)

    @property
    def one(self) -> bool:
        """The passage is one sentence."""
        return len(self.chosen) == 1


Found = tuple[str, str] | None


def _names(c: _Case) -> Found:
    names = c.source.names
    for i, w in enumerate(c.words):
        if w.name and not w.direction and w.key not in c.spare and not names.has(w.text) \
                and not (plain(w.text) in KIND_NAMES and w.key in c.source.keys) \
                and not _initials_found(c.words, i, names) and not _given_name(c, i):
            return UNSUPPORTED, f"\u2018{w.text}\u2019 is nowhere in the source"
    return None


def _initials_found(words: list[Word], i: int, names: NameForms) -> bool:
    """The source writes this name by its initials or the claim's initials in full: "United States" where the
    source says "US", "WA" where it says "west australian"."""
    if initialism(words[i].text):
        return names.spells(words[i].text)
    start, end = i, i + 1
    while start > 0 and _capital(words[start - 1]):
        start -= 1
    while end < len(words) and _capital(words[end]):
        end += 1
    return any(names.abbreviates("".join(w.text[0] for w in words[a:b]))
               for a in range(start, i + 1) for b in range(max(a + 2, i + 1), min(end, a + 4) + 1))


def _given_name(c: _Case, i: int) -> bool:
    """A first name the source leaves out of a person it names by title or role and surname: "Ronald" of
    "President Ronald Reagan" where the source writes "President Reagan" (or "Mr Charney", "striker Tevez"), and
    no other first name before that surname ("Nancy Reagan": then "Ronald" is another person)."""
    j = i + 1
    while j < len(c.words) and j <= i + 2 and c.words[j].name and not c.source.names.has(c.words[j].text):
        j += 1  # Ronald Wilson Reagan
    if j >= len(c.words) or not c.words[j].name or c.words[j].direction or not c.source.names.has(c.words[j].text) \
            or j + 1 < len(c.words) and c.words[j + 1].name:  # the surname ends the name: not "X Volodymyr Zelenskiy"
        return False
    before = c.source.before(c.words[j].text)
    roles = {w for w in before if plain(w.text) in ROLES}
    given = {w for w in before - roles if w.key and (w.name or not w.text[:1].isupper() and w.text.isalpha())}
    return bool(roles) and not given


def _capital(w: Word) -> bool:
    """A word of a name, even one the check does not read as one (United States)."""
    return w.text[:1].isupper() and w.text.isalpha()


def _figures(c: _Case) -> Found:
    if not c.facts:
        return None
    claim = fold(c.claim)
    anchors = keywords(claim)
    here = _passage_facts(c.passage)
    placed = placed_facts(c.claim)
    for fact, needed in Counter(c.facts).items():
        found = c.source.facts.count(fact, anchors)
        if found >= needed and (not c.one or c.plain_share < SAME_PASSAGE or here.holds(fact, set())):
            continue
        about = set().union(*(context(claim, pos) for f, pos in placed if f == fact)) - {""}
        other = "" if found else _others(fact, c.passage, about, {f for f, _ in placed})
        if other:  # nowhere in the source, and the passage gives another figure of the same thing
            return CONTRADICTED, f"says {_short(fact.text)}, the source says {_short(other)}"
        if found >= needed:  # in the source, but not in the sentence the claim restates, which says another
            if _others(fact, c.passage, about, {f for f, _ in placed}):
                return UNSUPPORTED, f"the passage it restates does not say {_short(fact.text)}"
            continue
        return UNSUPPORTED, f"{_short(fact.text)} is nowhere in the source"
    return None


@lru_cache(maxsize=256)
def _passage_facts(passage: str) -> SourceText:
    """The facts of an aligned passage (kept: the claims of one answer often meet the same passage)."""
    return SourceText(passage)


def _short(text: str, limit: int = 60) -> str:
    """A figure or quotation as a reason quotes it: on one line, at most `limit` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit - 1] + "…"


def _others(fact: Fact, here: str, about: set[str], said: set[Fact]) -> str:
    """A figure or date of the passage of the same kind (and unit) as the fact, said of the same thing (a content
    word of the claim around the fact stands around it too), that the claim does not state itself; as written."""
    text = fold(here)
    for other, pos in placed_facts(here):
        if other.kind == fact.kind and other.unit == fact.unit and not _is_year(other, fact) and other not in said \
                and (other.value != fact.value or other.date != fact.date or other.phrase != fact.phrase) \
                and (about & context(text, pos) if fact.kind != "quote" else _misquoted(fact, other)):
            return other.text
    return ""


def _misquoted(fact: Fact, other: Fact) -> bool:
    """Two quotations that are one with words changed (not one a part of the other: a title and a longer one)."""
    mine, theirs = set(fact.phrase.split()), set(other.phrase.split())
    return not mine <= theirs and not theirs <= mine and len(mine & theirs) * 2 >= max(len(mine), len(theirs))


def _is_year(other: Fact, fact: Fact) -> bool:
    """A year in the passage is no other spelling of a claim's figure that is not a year."""
    return fact.kind == "number" and other.value is not None and fact.value is not None and not other.unit \
        and 1000 <= other.value <= 2100 and not 1000 <= fact.value <= 2100


def _negation(c: _Case) -> Found:
    """A negation on one side on words the other says plainly ("did not carry" against "carried")."""
    if c.share < ALIGNED:
        return None
    shared = {w.key for w in c.content} & c.keys
    whole = c.one and len(shared) >= WHOLE * len(c.keys)
    found = polarity(c.words, c.window, whole)
    if found is not None and found[0] == "claim":  # unless another sentence of the source says it the same way
        found = polarity(c.words, c.window, whole, [n for i, words in enumerate(c.source.words) if i not in c.chosen
                                                    for n in negations(words)])
    if found is None:
        return None
    side, word = found
    return CONTRADICTED, (f"says \u2018{word}\u2019, the source does not" if side == "claim"
                          else f"the source says \u2018{word}\u2019, the claim does not")


def _direction(c: _Case) -> Found:
    """A direction whose opposite alone the passage gives about the same thing."""
    if c.share < ALIGNED:
        return None
    found = reversed_direction(c.words, c.window)
    return (CONTRADICTED, f"says \u2018{found[0]}\u2019, the source says \u2018{found[1]}\u2019") if found else None


def _roles(c: _Case) -> Found:
    """A name doing what, in the passage, only other names do."""
    if c.share < ALIGNED:
        return None
    found = swapped_role(c.words, c.window)
    return (UNSUPPORTED, f"in the source, \u2018{found[1]}\u2019 is not said of \u2018{found[0]}\u2019") if found \
        else None


def _words(c: _Case) -> Found:
    plain = [w for i, w in enumerate(c.words) if w.key and w.key[0] != "#" and not _classifier(c.words, i)
             and w.key not in c.spare]
    missing = [w.text for i, w in enumerate(c.words) if w in plain and w.key not in c.source.keys
               and not _reworded(w.text, c.source.keys) and not (w.name and not w.direction)  # _names found it
               and not (i == 0 and w.text[:1].isupper() and _given_name(c, i))]  # "Ronald Reagan ..."
    if len(missing) > math.floor(len(plain) / SPARE):
        return UNSUPPORTED, f"\u2018{missing[0]}\u2019 is nowhere in the source"
    return None


def _classifier(words: list[Word], i: int) -> bool:
    """A place's kind before its name ("the city of Milan"): it says nothing the name does not."""
    return words[i].text.casefold() in PLACE_KINDS and i + 2 < len(words) and words[i + 1].text.casefold() == "of"


def _reworded(word: str, keys: set[str]) -> bool:
    """A word the source does not write, one of whose WordNet synonyms or derived nouns and verbs it does
    (wordnet.py: the system's database, else the shipped table of the commonest words)."""
    return any(key_of(s) in keys for s in synonyms(word))
