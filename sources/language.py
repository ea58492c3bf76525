"""Claims written in another language than their source (`research --language`, or a page in another language):
such a claim is judged on what survives translation, its names, figures and dates.

`across_languages(claim, source texts)` is the check's one hook (sources/check.py): when the claim's language
differs from every cited source's, it gives the claim with the scale words of its figures in English (187
Millionen -> 187 million) and, as the words a common figure must stand near, only the claim's names that its
sources also write; else None and the claim is checked as any other. The language is guessed from the script,
and for Latin script from the commonest words and letters of seven languages; too little text to tell is no guess.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

from sources.facts import keywords
from sources.spelling import fold

SAMPLE = 20_000  # characters of a source its language is guessed from
_STOPWORDS = {
    "en": "the and of to in is was for that with are on by it as from were has have this a an at be been had not "
          "or but which who said says their its after",
    "de": "der die das und ist nicht mit von den dem im am zu auf ein eine wurde wurden für sich des als auch rund "
          "er sie bis nach",
    "fr": "le la les et est de des du une un dans en pour que qui sur pas au aux été par sont il elle",
    "es": "el la los las y es del en que por una un con para se fue son al su",
    "it": "il la lo gli le e è di del della che per una un con non sono nel alla",
    "pt": "o a os as e é do da dos das em que para com uma um não foi no na",
    "nl": "de het een en is van dat op te in voor met zijn niet werd ook",
}
_WORDS = {lang: set(words.split()) for lang, words in _STOPWORDS.items()}
_LETTERS = {"de": "äöüß", "fr": "éèêàçùœ", "es": "ñáíóú¿¡", "it": "àèìòù", "pt": "ãõçáéêó", "nl": "ĳ"}
_SCRIPTS = {"CYRILLIC": "ru", "GREEK": "el", "ARABIC": "ar", "HEBREW": "he", "CJK": "zh", "HIRAGANA": "ja",
            "KATAKANA": "ja", "HANGUL": "ko", "DEVANAGARI": "hi", "THAI": "th"}
_SCALES = [  # a figure's scale word in other languages, as the fact reader knows it
    (r"milliarden|milliarde|mrd\.?|milliards?|miliardi|miliardo|mil millones|bilhões|bilhão|miljard|миллиард\w*",
     "billion"),
    (r"millionen|million|mio\.?|millions|millones|millón|milioni|milione|milhões|milhão|miljoen|миллион\w*|млн\.?",
     "million"),
    (r"tausend|mille|mil|mila|duizend|тысяч\w*|тыс\.?", "thousand"),
]
_SCALE = [(re.compile(rf"(?<=\d)(\s?)(?:{words})(?!\w)", re.IGNORECASE), english) for words, english in _SCALES]
_WORD = re.compile(r"[^\W\d_]+")
_ASCII_LETTERS = re.compile(r"[A-Za-z]")
_OTHER_LETTERS = re.compile(r"[^\W\d_A-Za-z]")
_NAME = re.compile(r"(?<![.!?]\s)(?<!^)\b[^\W\d_][^\W_]*", re.UNICODE)


@lru_cache(maxsize=512)
def language_of(text: str) -> str | None:
    """The text's language as a short code (en, de, ru, zh ...), or None when it cannot be told."""
    text = text[:SAMPLE]
    scripts: Counter[str] = Counter()
    latin = len(_ASCII_LETTERS.findall(text))  # the common case told at C speed; only other letters are named
    if latin:
        scripts["LATIN"] = latin
    for ch in _OTHER_LETTERS.findall(text):
        name = unicodedata.name(ch, "")
        scripts[name.split(" ")[0] if name else ""] += 1
    if not scripts:
        return None
    script, _ = scripts.most_common(1)[0]
    if script != "LATIN":
        return _SCRIPTS.get(script)
    lower = text.casefold()
    words = Counter(_WORD.findall(lower))
    scores = sorted(((sum(words[w] for w in stop) + 2 * sum(lower.count(c) for c in _LETTERS.get(lang, "")), lang)
                     for lang, stop in _WORDS.items()), reverse=True)
    (best, lang), (second, _) = scores[0], scores[1]
    return lang if best >= 2 and best > second else None


def in_english_scale(claim: str) -> str:
    """The claim with its figures' scale words in English (187 Millionen -> 187 million)."""
    for pattern, english in _SCALE:
        claim = pattern.sub(f" {english}", claim)
    return claim


def names(claim: str) -> set[str]:
    """The stems of the claim's names: capitalised words not at the start of a sentence."""
    return keywords(fold(" ".join(w for w in _NAME.findall(claim) if w[:1].isupper())))


def across_languages(claim: str, sources: Sequence[str]) -> tuple[str, set[str]] | None:
    """For a claim in another language than every source it cites: (the claim with English scale words, the
    names a common figure must stand near: those its sources write too); None when the languages agree or
    cannot be told."""
    mine = language_of(claim)
    theirs = {language_of(s) for s in sources}
    if mine is None or not sources or None in theirs or mine in theirs:
        return None
    written = set().union(*(_written(s) for s in sources))
    words = keywords(fold(claim))
    if words and len(words & written) >= len(words) / 2:  # half its words are the source's: one language after all
        return None
    return in_english_scale(claim), names(claim) & written


@lru_cache(maxsize=128)
def _written(text: str) -> frozenset[str]:
    return frozenset(keywords(fold(text)))
