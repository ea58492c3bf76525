"""A text as the claim check reads it: words with their match keys (a light stem, a synonym's group, a
direction's axis and sign, a negation, a name), sentences, and a source's sentences indexed by word key with
its facts (facts.SourceText). meaning.py judges a claim on what this gives.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

from sources.facts import UNIT_WORDS, SourceText
from sources.lexicon import DIRECTIONS, NEGATIONS, STOP, SYNONYMS, open_contractions, stem
from sources.names import NameForms
from sources.spelling import fold, plain

_TOKEN = re.compile(r"[,;:()\[\]—–]|\s-\s|[^\W\d_]+|\d+(?:[.,]\d+)*")
_SENTENCE_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“(\[]?[A-Z0-9])|\n+")
ABBREVIATION = re.compile(r"(?:\b[A-Za-z]|\bNo|\b(?i:mr|mrs|ms|dr|st|jr|sr|inc|co|ltd|vs|approx|ca|cf|est|fig|"
                           r"figs|vol|pp|"
                           r"al|e\.g|i\.e|u\.s|u\.k|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec|gen|gov|sen|rep|prof|"
                           r"lt|col|capt))\.$")
_ANY_END = re.compile(r"(?<=[.!?])[\"'”’)\]]*\s+(?=[\"'“(\[]?\w)|\n+")  # a lower-cased text's sentences
_CAPITAL = re.compile(r"[A-Z]")


@dataclass(frozen=True)
class Word:
    """One word of a text as the check reads it: `key` is what it matches on ("" for a function word)."""

    text: str
    key: str
    name: bool = False
    negation: bool = False
    direction: tuple[str, int] | None = None


BREAK = Word(",", "")  # a comma, semicolon, colon, dash or bracket: a clause ends


def read_words(text: str, first_is_name: bool = True, folded: bool = False) -> list[Word]:
    """The words of a text (contractions opened), each with its key, negation or direction; a clause break
    (comma, semicolon, colon, dash, bracket) is BREAK. `folded`: the text went through facts.fold already."""
    out = [_WORDS.get(w) or _word(w) for w in _TOKEN.findall(open_contractions(text if folded else fold(text)))]
    if out and not first_is_name and out[0].name:
        out[0] = Word(out[0].text, out[0].key)
    return out


_WORDS: dict[str, Word] = {}


def _word(w: str) -> Word:
    """One word read, and kept: the same spelling always reads the same way."""
    lower = plain(w)
    if w in ",;:()[]—–" or w == " - ":
        word = BREAK
    elif lower in NEGATIONS:
        word = Word(w, "", negation=True)
    elif lower in DIRECTIONS:
        axis, sign = DIRECTIONS[lower]
        word = Word(w, f"{axis}{'+' if sign > 0 else '-'}", direction=(axis, sign))
    elif w[0].isdigit():
        word = Word(w, "#" + w.replace(",", ""))
    elif lower in STOP or lower in UNIT_WORDS or len(lower) < 2 or len(lower) < 3 and not w.isupper():
        word = Word(w, "")
    else:
        word = Word(w, key_of(lower), name=w[0].isupper())
    if len(_WORDS) < 200_000:
        _WORDS[w] = word
    return word


def key_of(word: str) -> str:
    """What a content word matches on: its synonym group in lexicon.py, else its stem."""
    lower = plain(word)
    return SYNONYMS.get(lower) or SYNONYMS.get(stem(lower)) or stem(lower)


class Passages:
    """A source's text cut into sentences, indexed by word key, with its facts (facts.SourceText)."""

    def __init__(self, text: str) -> None:
        self.facts = SourceText(text)
        self.sentences = split_sentences(self.facts.text)
        self.words = [read_words(s, folded=True) for s in self.sentences]
        self.keysets = [{w.key for w in ws if w.key} for ws in self.words]
        self.index: dict[str, list[int]] = {}
        for i, keys in enumerate(self.keysets):
            for key in keys:
                self.index.setdefault(key, []).append(i)
        self.keys = set(self.index)
        self.names = NameForms(w.text for ws in self.words for w in ws if w.key or w.text.isalpha() and len(w.text) < 4)
        self._before: dict[str, set[Word]] | None = None

    def before(self, name: str) -> set[Word]:
        """The words the text writes just before this word (BREAK at a sentence's or clause's start): "President
        Reagan", "Nancy Reagan" -> {President, Nancy}. Made on the first question (few claims ask)."""
        if self._before is None:
            self._before = {}
            for ws in self.words:
                for j, w in enumerate(ws):
                    if w.key and w.text.isalpha():
                        self._before.setdefault(plain(w.text), set()).add(ws[j - 1] if j else BREAK)
        return self._before.get(plain(name), set())

    def align(self, weights: dict[str, float]) -> tuple[list[int], float]:
        """The sentence, or two sentences at most three apart, holding most of the weighted keys (a second one
        only for at least one more word; of equals, the one with fewest other words), and the share of the
        weights they hold."""
        hits: dict[int, float] = {}
        for key, weight in weights.items():
            for i in self.index.get(key, ()):
                hits[i] = hits.get(i, 0.0) + weight
        if not hits:
            return [], 0.0
        best, rank = ([0], 0.0), (-1.0, 0, 0, 0)
        for i in sorted(hits, key=lambda i: (-hits[i], i))[:8]:
            for j in range(max(0, i - 3), min(len(self.sentences), i + 4)):
                keys = self.keysets[i] | self.keysets[j]
                score = sum(w for k, w in weights.items() if k in keys)
                # then the window saying least besides the claim, the nearer second sentence, the first
                ranked = (score - (0.99 if j != i else 0), -len(keys - weights.keys()), -abs(j - i), -min(i, j))
                if ranked > rank:
                    best, rank = (sorted({i, j}), score), ranked
        return best[0], best[1] / max(sum(weights.values()), 1e-9)


def split_sentences(text: str) -> list[str]:
    """The sentences of a text: lines cut at a stop before a capital or digit (any word in a lower-cased text),
    not after `Oct.`, `Mr.`, `U.S.`, `c.`."""
    out, start = [], 0
    lowered = len(_CAPITAL.findall(text)) * 300 < len(text)
    for m in (_ANY_END if lowered else _SENTENCE_END).finditer(text):
        word = text[max(start, text.rfind(" ", start, m.start()) + 1):m.start()]  # the word before the stop
        if m.group(0).strip() or not ABBREVIATION.search(word.rstrip("\"'”’)]")):
            out.append(text[start:m.start()])
            start = m.end()
    out.append(text[start:])
    return [s.strip() for s in out if s.strip()]


@lru_cache(maxsize=64)
def passages(text: str) -> Passages:
    """The indexed text (kept for the next claims that cite the same text)."""
    return Passages(text)


def joined(texts: Iterable[str]) -> Passages:
    """The texts of several cited sources read as one (a claim citing [1][2] may draw on both)."""
    return passages("\n\n".join(texts))
