"""Answer scoring: a careful GAIA-style grader (never accepts a wrong answer) beside the official GAIA rule."""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal

from tasks.numbers import NumberReading, read_number

__all__ = ["Verdict", "grade", "score_answer", "official_score", "clean_answer", "strip_citations", "normalize_text",
           "split_list", "parse_number"]


@dataclass(frozen=True)
class Verdict:
    """Our verdict, whether it could not be decided for sure, and the official GAIA scorer's verdict."""

    correct: bool
    unsure: bool
    correct_official: bool


def grade(answer: str, expected: str) -> Verdict:
    """Score one answer against the ground truth, both ways."""
    ours, unsure = _score(answer or "", expected)
    return Verdict(ours, unsure, official_score(answer, expected))


def score_answer(answer: str, expected: str) -> bool:
    """True when a careful grader would accept the answer (quasi-exact match, never a guess)."""
    return grade(answer, expected).correct


# ---- the official GAIA leaderboard rule, reimplemented from its published description -----------------

def official_score(answer: str | None, expected: str) -> bool:
    """GAIA's quasi-exact match: a float truth compares as a number, a truth with , or ; element-wise."""
    answer = "None" if answer is None else answer
    if _is_float(expected):
        return _official_number(answer) == float(expected)
    if "," in expected or ";" in expected:
        truth, given = re.split(r"[,;]", expected), re.split(r"[,;]", answer)
        if len(truth) != len(given):
            return False
        return all(_official_number(g) == float(t) if _is_float(t)
                   else _official_text(g, False) == _official_text(t, False) for g, t in zip(given, truth, strict=True))
    return _official_text(answer, True) == _official_text(expected, True)


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _official_number(text: str) -> float:
    for ch in "$%,":
        text = text.replace(ch, "")
    try:
        return float(text)
    except ValueError:
        return float("inf")


def _official_text(text: str, remove_punct: bool) -> str:
    text = re.sub(r"\s", "", text).lower()
    if remove_punct:
        text = text.translate(str.maketrans("", "", "!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"))
    return text


# ---- cleaning ------------------------------------------------------------------------------------------

_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"))
_TAGGED = re.compile(r"(?is)<(answer|final_answer|final)>(.*?)</\1>")
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
_LABEL = re.compile(
    r"(?is)^(?:.*\n)?[ \t*_#>]*(?:the[ \t]+)?(?:final[ \t_-]*answer|answer)(?:[ \t]+is)?[ \t*_]*"
    r"(?:[:：\-–—=]|(?<=is)[ \t])[ \t*_]*")
_WRAPPERS = "\"'`*_“”‘’«»「」"
# `Paris [1]`, `**Paris**[2].`, `Paris [1, 3], Rome [2]`: the citation markers the system prompt asks for
# (after a space or closing emphasis only, so `x[1]` stays code)
_CITATIONS = re.compile(r"(?:(?<=[*_.)”\"’])\s*|(?<=\S)\s+)(?:\[\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\])+(?=[\s,;.。*_]|$)")
_EMPHASIS_RUN = re.compile(r"^(\*\*|__)?(.*?)(\*\*|__)?$", re.S)


def _fold(text: str) -> str:
    """One spelling per character: NFC, full-width and ligatures folded, odd spaces and invisibles gone."""
    text = unicodedata.normalize("NFC", text).translate(_INVISIBLE)
    out = []
    for ch in text:
        code = ord(ch)
        if 0xFF01 <= code <= 0xFF5E or 0xFB00 <= code <= 0xFB06 or unicodedata.category(ch) == "Zs":
            out.append(unicodedata.normalize("NFKC", ch))
        else:
            out.append(ch)
    return "".join(out)


def strip_citations(answer: str) -> str:
    """The answer without `[n]` citation markers (applied to answers only: a truth may hold brackets)."""
    return _CITATIONS.sub("", answer or "")


def clean_answer(text: str) -> str:
    """Strip what models wrap answers in: labels, <answer> tags, \\boxed{}, quotes, bold, [brackets], a final
    period."""
    text = _fold(text or "").strip()
    for pattern in (_TAGGED, _BOXED):
        found = pattern.search(text)
        if found:
            text = found.group(found.lastindex or 1)
    text = _LABEL.sub("", text).strip()
    previous = None
    while text != previous:
        previous = text
        text = text.rstrip(" \t\n.。")
        runs = _EMPHASIS_RUN.match(text)
        if runs and runs.group(1) != runs.group(3):  # `Paris**` left of `Final Answer: **Paris**`
            text = runs.group(2).strip()
        if len(text) >= 2 and text[0] in _WRAPPERS and text[-1] in _WRAPPERS:
            text = text.strip(_WRAPPERS).strip()
        elif len(text) > 2 and text[0] == "[" and text[-1] == "]" and not re.search(r"[\[\]]", text[1:-1]):
            text = text[1:-1].strip()  # `[Paris]`
    return text


# ---- our grader ----------------------------------------------------------------------------------------

def _score(answer: str, expected: str) -> tuple[bool, bool]:
    answer, expected = clean_answer(strip_citations(answer)), clean_answer(expected)
    unsure = False
    truths = _readings(expected)
    for truth in truths:
        for given in _readings(answer):
            if len(given) != len(truth):
                continue
            verdicts = [_item(g, t) for g, t in zip(given, truth, strict=True)]
            if all(ok for ok, _ in verdicts):
                return True, False
            unsure = unsure or any(doubt for _, doubt in verdicts)
    if _suffix_comma_match(answer, expected) or _suffix_comma_match(expected, answer):
        return True, False
    return False, unsure


def _readings(text: str) -> list[list[str]]:
    """Ways to read text as a list: thousands-aware, then every comma splitting (`132,133,134`)."""
    readings = [split_list(text)]
    if ";" not in text:
        plain = [item.strip() for item in text.split(",")]
        if plain != readings[0]:
            readings.append(plain)
    return readings


def _item(answer: str, expected: str) -> tuple[bool, bool]:
    """One element: (accepted, undecidable)."""
    answer, expected = clean_answer(answer), clean_answer(expected)
    truth = read_number(expected)
    if truth.value is not None:
        got = read_number(answer)
        if got.value is not None and truth.unit and got.unit and got.unit != truth.unit:
            return False, got.value == truth.value  # `12 miles` for `12 km`
        if got.value is not None:
            return got.value == truth.value, _same_digits(got, truth)
        return False, got.leading == truth.value
    return normalize_text(answer) == normalize_text(expected), False


def _same_digits(got: NumberReading, truth: NumberReading) -> bool:
    """A different value from the same digits (`17 thousand` for `17`) may be the grader's call."""
    return got.value != truth.value and got.mantissa == truth.mantissa


def _suffix_comma_match(one: str, other: str) -> bool:
    """`Washington DC` for `Washington, D.C.`: a comma before an abbreviation is no list separator."""
    tail = one.split(",")[1:]
    if not tail or "," in other:
        return False
    if not all(len(re.sub(r"[\W_]", "", part)) <= 4 and re.search(r"[A-Za-z]", part) for part in tail):
        return False
    return normalize_text(one.replace(",", " ")) == normalize_text(other)


_SAME_SYMBOL = str.maketrans({"♯": "#", "−": "-", "–": "-", "—": "-"})
_KEEP = set("()[]{}/#%&@*+<>=^|~$€£¥°′″")


def normalize_text(text: str) -> str:
    """Lower-cased without whitespace and decorative punctuation; symbols and punctuation between digits
    (`1.11.1.7`, `3/4`, `C++`, `C#`, `A♯`, `A-`, `¬A ∨ B`) are kept because they change the answer."""
    text = _fold(text).lower().translate(_SAME_SYMBOL)
    out = []
    for i, ch in enumerate(text):
        if ch.isspace():
            continue
        if unicodedata.category(ch).startswith("P") and ch not in _KEEP and not _meaningful(text, i):
            continue
        out.append(ch)
    return "".join(out)


def _meaningful(text: str, i: int) -> bool:
    """Punctuation that carries meaning: between digits, or a final/lone `-` after a letter (`A-`)."""
    before = text[i - 1] if i > 0 else ""
    after = text[i + 1] if i + 1 < len(text) else ""
    if before.isdigit() and after.isdigit():
        return True
    if text[i] in "-−–" and (after.isdigit() and not before.isalnum()):
        return True
    return text[i] in "-−–" and before.isalnum() and (not after or after.isspace() or after in ",;)")


# Commas that are thousands separators (1,000 and 1,00,000) do not split a list; others and semicolons do.
_LIST_SPLIT = re.compile(r";|,(?!(?<=\d,)\d{3}(?!\d))(?!(?<=\d,)\d{2},\d)")


def split_list(text: str) -> list[str]:
    """Split on semicolons (when present, only on them) and on commas that are not thousands separators."""
    if ";" in text:
        return [item.strip() for item in text.split(";")]
    return [item.strip() for item in _LIST_SPLIT.split(text)]


def parse_number(text: str) -> Decimal | None:
    """The value of a number written with separators, currency, percent, scale words or a unit; else None."""
    return read_number(clean_answer(text)).value
