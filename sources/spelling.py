"""One spelling for what texts write many ways, before the claim check reads them (facts.py, meaning.py).

`fold`: NFKC, curly quotes and dashes straightened, no-break spaces folded, and the spacing that tokenised
texts (research sets, some exports, OCR) put inside figures and words undone: "£ 289" -> "£289", "26 , 000" ->
"26,000", "5 %" -> "5%", "2 - 0" -> "2-0", "40 - year - old" -> "40-year-old", "do n't" -> "don't", "city 's" ->
"city's", "A.P. McCoy" -> "AP McCoy". `plain`: a word without its accents (François -> francois), lower-cased,
for matching names.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

_FOLD = str.maketrans({"’": "'", "‘": "'", "–": "-", "—": "-", "−": "-", "\u00a0": " ", "\u202f": " ",
                       "\u2009": " ", "\u200b": "", "\u200c": "", "\u200d": "", "\ufeff": ""})
# (pattern, replacement), in order; each only where a tokeniser's spacing is the one reading
_RESPACE: list[tuple[re.Pattern[str], str | Callable[[re.Match[str]], str]]] = [
    (re.compile(r"(?<![\d,.])\d{1,3}(?: , \d{3})+(?!\d)"), lambda m: m.group(0).replace(" , ", ",")),  # "26 , 000"
    (re.compile(r"(?<![\d,.])(\d{1,3}), (?=\d{3}(?![\d,]))"), r"\1,"),  # "26, 000"
    (re.compile(r"(?<=\d) \. (?=\d)"), "."),  # "3 . 5"
    (re.compile(r"((?:^|[\s(])(?:US)?[$€£¥₹]) (?=\d)"), r"\1"),  # "£ 289"
    (re.compile(r"(?<=\d) (?=%)"), ""),  # "5 %"
    (re.compile(r"(?<=\d) --? (?=\d)"), "-"),  # "2 - 0", "1991 -- 2000"
    (re.compile(r"\b([A-Z])\.([A-Z])\.(?:([A-Z])\.)?(?= [A-Z][a-z])"), lambda m: "".join(g or "" for g in m.groups())),
    (re.compile(r"(?<=\d) - ([a-z]+) - (?=[a-z])"), r"-\1-"),  # "40 - year - old"
    (re.compile(r"(?<=\d) - (?=[a-z])"), "-"),  # "5 - day"
    (re.compile(r"(?i)(?<=\w) (n't)\b"), r"\1"),  # "do n't"
    (re.compile(r"(?i)(?<=\w) ('(?:s|re|ve|ll|d|m))\b"), r"\1"),  # "city 's"
]
_SPACED = re.compile(r"\d [,.%-]|\d, \d{3}\b|[$€£¥₹] \d| n't| '[a-z]|\b[A-Z]\.[A-Z]\.")


def fold(text: str) -> str:
    """One spelling per character (NFKC, quotes, dashes, spaces), and a tokeniser's spaces inside figures and
    contractions taken out."""
    text = unicodedata.normalize("NFKC", text).translate(_FOLD)
    if _SPACED.search(text):
        for pattern, repl in _RESPACE:
            text = pattern.sub(repl, text)
    return text


def plain(word: str) -> str:
    """The word lower-cased and without accents: `François` -> `francois`, `Zürich` -> `zurich`."""
    lower = word.casefold()
    if lower.isascii():
        return lower
    return "".join(ch for ch in unicodedata.normalize("NFKD", lower) if not unicodedata.combining(ch))
