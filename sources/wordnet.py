"""Rewordings from WordNet: a claim's word that its source does not write may be a synonym of one it does
("address" for "speak", "previous" for "former").

WordNet 3.0 (Princeton University, WordNet 3.0 licence: use, copy, modify and distribute with its notice) is read
where the system's package put it (Debian and Ubuntu: `apt-get install wordnet-base`, /usr/share/wordnet);
nothing is downloaded and nothing else is needed. Where the system has no database, the table shipped beside this
file (wordnet_common.txt, made by benchmarks/make_rewordings.py with WordNet's notice: its ~2,000 commonest words)
stands in for it. The database is opened on the first look-up, never at import; each look-up is a binary
search in the sorted index file (as WordNet's own library does), then one line of the data file, both mapped
into memory; words are taken from the first (commonest) sense of each part of speech only.
"""

from __future__ import annotations

import mmap
from functools import lru_cache
from pathlib import Path

PLACES = (Path("/usr/share/wordnet"), Path("/usr/local/share/wordnet"))  # where the system's packages put it
TABLE = Path(__file__).with_name("wordnet_common.txt")  # the commonest words, where the system has none
PARTS = ("noun", "verb", "adj", "adv")
# the regular endings WordNet's own morphology strips, per part of speech: (ending, replacement)
_ENDINGS = {"noun": (("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"),
                     ("men", "man"), ("ies", "y")),
            "verb": (("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"),
                     ("ing", "")),
            "adj": (("er", ""), ("est", ""), ("er", "e"), ("est", "e")), "adv": ()}


class WordNet:
    """One WordNet database folder, its files mapped on first use."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._maps: dict[str, mmap.mmap] = {}
        self._exceptions: dict[str, dict[str, str]] = {}

    def _map(self, name: str) -> mmap.mmap:
        if name not in self._maps:
            with (self.folder / name).open("rb") as f:
                self._maps[name] = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        return self._maps[name]

    def _exception(self, part: str, word: str) -> str | None:
        """The base form of an irregular word (went -> go) from the part's exception list."""
        if part not in self._exceptions:
            path = self.folder / f"{part}.exc"
            lines = path.read_text(encoding="latin-1").splitlines() if path.is_file() else []
            self._exceptions[part] = {p[0]: p[1] for p in (line.split() for line in lines) if len(p) >= 2}
        return self._exceptions[part].get(word)

    def _index_line(self, part: str, lemma: str) -> bytes | None:
        """The index line of a lemma: a binary search over the sorted file, by line."""
        data, key = self._map(f"index.{part}"), lemma.encode("latin-1", "replace") + b" "
        low, high = 0, len(data)
        while low < high:
            mid = (low + high) // 2
            start = data.rfind(b"\n", 0, mid) + 1
            end = data.find(b"\n", start)
            end = len(data) if end < 0 else end
            line = data[start:end]
            if line.startswith(b"  "):  # the licence header at the top sorts first
                low = end + 1
            elif line.startswith(key):
                return line
            elif line < key:
                low = end + 1
            else:
                high = start
        return None

    def first_sense(self, part: str, lemma: str) -> list[str]:
        """The words of the lemma's commonest sense as this part of speech (the lemma's own included) and, for a
        noun or a verb, the nouns and verbs WordNet derives from the lemma in that sense (decision: decide)."""
        line = self._index_line(part, lemma)
        if line is None:
            return []
        fields = line.split()  # lemma pos synsets pointers [pointer ...] senses tagged offset [offset ...]
        record = self._record(part, int(fields[6 + int(fields[3])]))
        words = _words_of(record)
        if part in ("noun", "verb"):
            words += self._derived(record, words.index(lemma) + 1 if lemma in words else 0)
        return [w for w in words if w.isalpha()]

    def _record(self, part: str, offset: int) -> list[bytes]:
        """A synset's line of the data file, split: offset, file, type, word count, words, pointers ..."""
        data = self._map(f"data.{part}")
        end = data.find(b"\n", offset)
        return data[offset:end if end >= 0 else len(data)].split()

    def _derived(self, record: list[bytes], number: int) -> list[str]:
        """The nouns and verbs of the synset's derivation pointers (`+`) from word `number` (or from all)."""
        at = 4 + 2 * int(record[3], 16)
        out = []
        for k in range(int(record[at])):  # pointer: symbol, target offset, part, source/target word numbers
            symbol, target, pos, ends = record[at + 1 + 4 * k:at + 5 + 4 * k]
            if symbol == b"+" and pos in (b"n", b"v") and int(ends[:2], 16) in (0, number) and int(ends[2:], 16):
                words = _words_of(self._record("noun" if pos == b"n" else "verb", int(target)))
                out.append(words[int(ends[2:], 16) - 1])
        return out

    def lemmas(self, word: str, part: str) -> list[str]:
        """The base forms a word may have as this part of speech (secured -> secure, went -> go)."""
        irregular = self._exception(part, word)
        return [word, *([irregular] if irregular else []), *_regular(word, part)]


def _words_of(record: list[bytes]) -> list[str]:
    """A synset's words, lower-case, without an adjective's marker (previous(a))."""
    return [record[4 + 2 * i].decode("latin-1").lower().split("(")[0] for i in range(int(record[3], 16))]


class Common:
    """The shipped table of WordNet's commonest words (TABLE), read whole on first use: what WordNet gives for
    them, without the system's database."""

    def __init__(self, path: Path) -> None:
        self.senses: dict[tuple[str, str], list[str]] = {}
        self.exceptions: dict[tuple[str, str], str] = {}
        lines = path.read_text(encoding="utf-8").splitlines() if path.is_file() else []
        for line in lines:
            part, word, *rest = line.split() if line and not line.startswith("#") else ("", "")
            if part.endswith("!") and rest:
                self.exceptions[part[:-1], word] = rest[0]
            elif part:
                self.senses[part, word] = [word, *rest]

    def first_sense(self, part: str, lemma: str) -> list[str]:
        return self.senses.get((part, lemma), [])

    def lemmas(self, word: str, part: str) -> list[str]:
        irregular = self.exceptions.get((part, word))
        return [word, *([irregular] if irregular else []), *_regular(word, part)]


def _regular(word: str, part: str) -> list[str]:
    """The base forms the regular endings of this part of speech allow (secured -> secure, secur)."""
    return [word[:-len(end)] + repl for end, repl in _ENDINGS[part] if word.endswith(end) and len(word) > len(end) + 2]


@lru_cache(maxsize=1)
def database() -> WordNet | None:
    """The system's WordNet, or None where it is not installed."""
    folder = next((p for p in PLACES if (p / "index.noun").is_file() and (p / "data.noun").is_file()), None)
    return WordNet(folder) if folder else None


@lru_cache(maxsize=1)
def common() -> Common:
    """The shipped table of the commonest words (empty if it is missing)."""
    return Common(TABLE)


@lru_cache(maxsize=20_000)
def synonyms(word: str) -> frozenset[str]:
    """The words of the commonest sense of each part of speech the word may be (lower-case, one-word ones), from
    the system's WordNet, else from the shipped table of the commonest words."""
    wordnet: WordNet | Common = database() or common()
    if not word.isalpha():
        return frozenset()
    found: set[str] = set()
    for part in PARTS:
        for lemma in wordnet.lemmas(word.casefold(), part):
            senses = wordnet.first_sense(part, lemma)
            if senses:
                found.update(senses)
                break
    return frozenset(found - {word.casefold()})
