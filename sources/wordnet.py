"""Rewordings from WordNet, when the system has its database: a claim's word that its source does not write may
be a synonym of one it does ("address" for "speak", "previous" for "former").

WordNet 3.0 (Princeton University, WordNet 3.0 licence: use, copy, modify and distribute with its notice) is read
where the system's package put it (Debian and Ubuntu: `apt-get install wordnet-base`, /usr/share/wordnet);
nothing is downloaded and nothing else is needed. Without it, `synonyms` gives nothing and the check uses its own
table (lexicon.py). The database is opened on the first look-up, never at import; each look-up is a binary
search in the sorted index file (as WordNet's own library does), then one line of the data file, both mapped
into memory; words are taken from the first (commonest) sense of each part of speech only.
"""

from __future__ import annotations

import mmap
from functools import lru_cache
from pathlib import Path

PLACES = (Path("/usr/share/wordnet"), Path("/usr/local/share/wordnet"))  # where the system's packages put it
_PARTS = ("noun", "verb", "adj", "adv")
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
        """The words of the lemma's commonest sense as this part of speech (the lemma's own included)."""
        line = self._index_line(part, lemma)
        if line is None:
            return []
        fields = line.split()  # lemma pos synsets pointers [pointer ...] senses tagged offset [offset ...]
        offset = int(fields[6 + int(fields[3])])
        data = self._map(f"data.{part}")
        end = data.find(b"\n", offset)
        record = data[offset:end if end >= 0 else len(data)].split()
        count = int(record[3], 16)
        words = (record[4 + 2 * i].decode("latin-1").lower().split("(")[0] for i in range(count))  # previous(a)
        return [w for w in words if w.isalpha()]

    def lemmas(self, word: str, part: str) -> list[str]:
        """The base forms a word may have as this part of speech (secured -> secure, went -> go)."""
        out = [word]
        irregular = self._exception(part, word)
        if irregular:
            out.append(irregular)
        out += [word[:-len(end)] + repl for end, repl in _ENDINGS[part]
                if word.endswith(end) and len(word) > len(end) + 2]
        return out


@lru_cache(maxsize=1)
def database() -> WordNet | None:
    """The system's WordNet, or None where it is not installed."""
    folder = next((p for p in PLACES if (p / "index.noun").is_file() and (p / "data.noun").is_file()), None)
    return WordNet(folder) if folder else None


@lru_cache(maxsize=20_000)
def synonyms(word: str) -> frozenset[str]:
    """The words of the commonest sense of each part of speech the word may be (lower-case, one-word ones), or
    nothing without WordNet."""
    wordnet = database()
    if wordnet is None or not word.isalpha():
        return frozenset()
    found: set[str] = set()
    for part in _PARTS:
        for lemma in wordnet.lemmas(word.casefold(), part):
            senses = wordnet.first_sense(part, lemma)
            if senses:
                found.update(senses)
                break
    return frozenset(found - {word.casefold()})
