"""Read a number the way people write it: separators, signs, currency, percent, scale words, a unit."""

from __future__ import annotations

import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation

_CURRENCY = r"(?:US\$|[A-Z]{0,2}[$€£¥₹₩₽]|Rs\.?|INR|USD|EUR|GBP|JPY|CHF|CAD|AUD|CNY)"
_DIGITS = r"""(?:\d{1,3}(?:,\d{3})+(?!\d)        # 1,000,000
             |\d{1,2}(?:,\d{2})+,\d{3}(?!\d)     # 1,00,000 (Indian grouping)
             |\d{1,3}(?:[ ]\d{3})+(?!\d)         # 1 000 000 (space or no-break space, folded)
             |\d+)(?:\.\d+)?|\.\d+"""
# A unit word: letters, `km/h`, `m^3`, `m²`, `°C`; never digits inside (`80GSFC21M0002` is no 80).
_UNIT_WORD = r"(?:°[CF]?|[^\W\d_]+)(?:[/·.][^\W\d_]+|\^-?\d|[²³])*\.?"
_SCALE = {"thousand": 3, "k": 3, "million": 6, "mn": 6, "mio": 6, "m": 6, "billion": 9, "bn": 9, "b": 9,
          "mrd": 9, "trillion": 12, "tn": 12, "lakh": 5, "crore": 7}
_NUMBER = re.compile(
    rf"""^(?P<sign1>[-+−–]|minus\s|negative\s)?\s*(?:{_CURRENCY}\s*)?(?P<sign2>[-+−–])?\s*
    (?P<num>{_DIGITS})
    (?:\s*(?:[eE](?P<exp>[-+−]?\d+)|[x×*]\s*10\^(?P<exp2>[-+−]?\d+)))?
    (?:\s*(?P<scale>thousand|million|billion|trillion|lakh|crore|mn|mio|mrd|bn|tn|[kK]|M|B)\b)?
    \s*(?:%|‰|{_CURRENCY}|(?P<tail>{_UNIT_WORD}(?:\s+{_UNIT_WORD}){{0,2}}))?\s*$""",
    re.VERBOSE | re.IGNORECASE,
)
_POWER = re.compile(r"^10\s*\^\s*\(?(?P<exp>[-+−]?\d+)\)?$")
_LEADING = re.compile(rf"^[-+−–]?\s*(?:{_CURRENCY}\s*)?(?P<num>{_DIGITS})\b", re.VERBOSE)
# Words after a number that change what it claims: "3 or more", "8 at most", "42 is the answer".
_NOT_UNITS = {"or", "and", "more", "less", "most", "least", "at", "is", "are", "was", "were", "in", "total",
              "than", "the", "answer", "about", "approximately", "around", "over", "under", "nearly",
              "almost", "roughly", "only", "exactly", "plus", "to", "up", "from", "of", "per", "each",
              "times", "out", "not", "no", "maybe", "probably", "maximum", "minimum", "ish", "odd", "some",
              "above", "below", "before", "after", "since", "until", "by"}


@dataclass(frozen=True)
class NumberReading:
    """The number's value (None if the text is not one number), its digits before any scale word, and the
    value of a number that merely starts the text (`55` of `55 in total`), for telling `unsure` apart."""

    value: Decimal | None
    mantissa: Decimal | None = None
    leading: Decimal | None = None
    unit: str = ""


def read_number(text: str) -> NumberReading:
    """Read text as one number, or say which number it starts with."""
    text = text.strip().replace("\u00a0", " ").replace("\u202f", " ").replace("\u2009", " ")
    power = _POWER.match(text)
    if power:
        exp = int(power.group("exp").replace("−", "-"))
        return NumberReading(Decimal(10) ** exp, Decimal(10) ** exp)
    m = _NUMBER.match(text)
    if m is None or not _unit_tail(m.group("tail")) or (m.group("sign1") and m.group("sign2")):
        return NumberReading(None, leading=_leading(text))
    try:
        mantissa = Decimal(re.sub(r"[, ]", "", m.group("num")))
    except InvalidOperation:
        return NumberReading(None)
    exp = int((m.group("exp") or m.group("exp2") or "0").replace("−", "-"))
    scale = m.group("scale") or ""
    if scale in {"m", "b"}:  # "12 m" is metres; only the upper-case letters are scales (12M, 1.2B)
        scale = ""
    exp += _SCALE.get(scale.lower(), 0)
    value = mantissa.scaleb(exp)
    negative = (m.group("sign1") or m.group("sign2") or "").strip().lower() in {"-", "−", "–", "minus",
                                                                                   "negative"}
    unit = " ".join((m.group("tail") or "").lower().split())
    return NumberReading(-value if negative else value, -mantissa if negative else mantissa, unit=unit)


def _unit_tail(tail: str | None) -> bool:
    """A unit (`km`, `km/h`, `m²`, `apples`) and not a phrase that qualifies the number."""
    if not tail:
        return True
    words = [word.strip(".,;:!?").lower() for word in tail.split()]
    if words[0] in {"at", "in"}:  # "519 at bats", "12 in" are units; "8 at most", "55 in total" are not
        return len(words) == 1 or words[1] not in {"most", "least", "total", "all", "the", "a", "an"}
    return not any(word in _NOT_UNITS for word in words)


def _leading(text: str) -> Decimal | None:
    m = _LEADING.match(text)
    if m is None:
        return None
    try:
        return Decimal(re.sub(r"[, ]", "", m.group("num")))
    except InvalidOperation:
        return None
