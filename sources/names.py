"""A name of a claim found in its source however it is written: in any case, with or without accents
(spelling.plain), with a plural s, as the place's demonym ("Belgian" for "Belgium", "French" for "France",
"Scottish" for "Scotland") or its compass adjective ("Western" for "west"), and as initials both ways ("US" for
"United States", "WA" for "Western Australia", "JRR" for "j.r.r."). meaning.py asks `NameForms.has` for each
capitalised word of a claim, and `NameForms.spells` for the initials of a run of them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from sources.lexicon import STOP
from sources.spelling import plain

# demonyms a suffix rule does not reach (lower-case, accents off): demonym -> the place's names
_IRREGULAR = {
    "french": "france", "dutch": "netherlands holland", "welsh": "wales", "irish": "ireland", "spanish": "spain",
    "danish": "denmark", "finnish": "finland", "polish": "poland", "swiss": "switzerland", "english": "england",
    "british": "britain uk", "scots": "scotland", "norwegian": "norway", "peruvian": "peru",
    "filipino": "philippines", "thai": "thailand", "emirati": "uae emirates", "czech": "czechia", "slovak":
    "slovakia", "kiwi": "zealand", "briton": "britain", "american": "america usa us", "swedish": "sweden",
    "icelandic": "iceland", "turkish": "turkey turkiye", "greek": "greece", "maltese": "malta",
    "cypriot": "cyprus", "monegasque": "monaco", "malagasy": "madagascar", "bangladeshi": "bangladesh",
    "yemeni": "yemen", "omani": "oman", "qatari": "qatar", "kuwaiti": "kuwait", "saudi": "arabia",
    "indian": "india", "afghan": "afghanistan", "asian": "asia", "texan": "texas", "scottish": "scotland",
    "western": "west", "eastern": "east", "northern": "north", "southern": "south",  # Western Australia, west
}
_PLACES: dict[str, set[str]] = {}
for _demonym, _places in _IRREGULAR.items():
    for _place in _places.split():
        _PLACES.setdefault(_place, set()).add(_demonym)
_SUFFIX = re.compile(r"(?:ians?|ans?|eses?|ish|is|i|ic|ers?|ites?)$")
ROOT = 4  # letters a demonym and its place must share at least


def _root(word: str) -> str:
    """The word without a demonym's ending (Belgian -> belgi, Chinese -> chin, Israeli -> israel)."""
    return _SUFFIX.sub("", word)


class NameForms:
    """The words a text writes, as plain forms, indexed so that a claim's name finds its other spellings."""

    def __init__(self, words: Iterable[str]) -> None:
        self.words = list(words)
        self._forms: set[str] | None = None
        self._initials: set[str] | None = None
        self._acronyms: set[str] | None = None
        self.prefixes: dict[str, list[str]] = {}

    @property
    def forms(self) -> set[str]:
        """The text's words as plain forms (made on the first question: most claims ask none)."""
        if self._forms is None:
            self._forms = {plain(w) for w in self.words}
            for form in self._forms:
                if len(form) >= ROOT and form.isalpha():
                    self.prefixes.setdefault(form[:ROOT], []).append(form)
        return self._forms

    def has(self, word: str) -> bool:
        """True when the text writes this name: in full, in any case or accents, with or without a plural s, or
        its place for a demonym and its demonym for a place."""
        w, forms = plain(word), self.forms
        if w in forms or w + "s" in forms or w.endswith("s") and w[:-1] in forms:
            return True
        if any(d in self.forms for d in _PLACES.get(w, ())) or any(p in self.forms for p in _IRREGULAR.get(w,
                                                                                                         "").split()):
            return True
        return len(w) > ROOT and any(_related(w, form) for form in self.prefixes.get(w[:ROOT], ()))

    def spells(self, initials: str) -> bool:
        """True when the text writes, in a row, two to four content words or single letters whose first letters
        are these initials ("WA": "west australian"; "JRR": "j.r.r.")."""
        if self._initials is None:
            letters = [plain(w)[:1] for w in self.words if len(w) == 1 or plain(w) not in STOP]
            self._initials = {"".join(letters[i:i + n]) for n in range(2, 5) for i in range(len(letters) - n + 1)}
        return plain(initials) in self._initials

    def abbreviates(self, initials: str) -> bool:
        """True when the text writes these initials as a name: in capitals (US), as single letters (u.s.), or in
        a text without capitals as a word that is no common one (wa)."""
        if self._acronyms is None:
            words = [w for w in self.words if w.isalpha()]
            lowered = not any(w[0].isupper() for w in words)
            self._acronyms = {plain(w) for w in words if initialism(w) or lowered and plain(w) not in STOP}
            run = ""
            for w in [*words, ""]:
                if len(w) == 1:
                    run += plain(w)
                else:
                    self._acronyms |= {run} if len(run) >= 2 else set()
                    run = ""
        return plain(initials) in self._acronyms


def initialism(word: str) -> bool:
    """A name written as its initials: two to four capitals (US, WA, JRR)."""
    return 2 <= len(word) <= 4 and word.isupper() and word.isalpha()


def _related(a: str, b: str) -> bool:
    """One of the two is the other's demonym: Belgium / Belgian, Italy / Italian, Canada / Canadian."""
    return _demonym_of(a, b) or _demonym_of(b, a)


_PLACE_ENDINGS = frozenset({"", "a", "ia", "y", "e", "o", "um", "ium", "land", "ey", "any", "s"})


def _demonym_of(demonym: str, place: str) -> bool:
    root = _root(demonym)
    return root != demonym and len(root) >= ROOT and place.startswith(root) and place[len(root):] in _PLACE_ENDINGS
