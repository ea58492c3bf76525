"""The checkable facts of a claim (numbers with units, dates, quoted phrases) and whether a text holds them.

A number matches however it is spelled: 2,148,000 / 2148000 / 2.148 million / $2.1 million for 2,148,000
dollars (a rounded figure only when the claim writes a scale word or a hedge such as "about"). A common
number (under 3 significant digits, or a year) must also stand near one of the claim's own words in the
source, so that a changed "12" is not excused by some other 12 on the page.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cached_property, lru_cache

from sources.dates import MONTHS, blank, dates_of, same_date, years_of
from sources.spelling import fold

# unit spelling -> one name; currency symbols before the number map the same way
_UNITS = {
    "%": "percent", "percent": "percent", "per cent": "percent", "pct": "percent",
    "percentage points": "point", "percentage point": "point", "points": "point", "point": "point",
    "pts": "point", "dollars": "usd", "dollar": "usd", "usd": "usd", "euros": "eur", "euro": "eur",
    "eur": "eur", "pounds": "gbp", "pound": "gbp", "gbp": "gbp", "yen": "jpy", "yuan": "cny",
    "km": "km", "kilometres": "km", "kilometers": "km", "kilometre": "km", "kilometer": "km",
    "miles": "mile", "mile": "mile", "mi": "mile", "metres": "m", "meters": "m", "metre": "m", "meter": "m",
    "m": "m", "cm": "cm", "centimetres": "cm", "centimeters": "cm", "mm": "mm", "millimetres": "mm",
    "millimeters": "mm", "feet": "ft", "foot": "ft", "ft": "ft", "inches": "inch", "inch": "inch",
    "yards": "yd", "yard": "yd", "kg": "kg", "kilograms": "kg", "kilogram": "kg", "kilos": "kg",
    "grams": "g", "gram": "g", "g": "g", "tonnes": "t", "tonne": "t", "tons": "t", "ton": "t",
    "lb": "lb", "lbs": "lb", "acres": "acre", "acre": "acre", "hectares": "ha", "hectare": "ha",
    "square feet": "sqft", "sq ft": "sqft", "square miles": "sqmi", "square kilometres": "km2",
    "square kilometers": "km2", "km2": "km2", "km²": "km2", "years": "year", "year": "year", "yrs": "year",
    "months": "month", "month": "month", "weeks": "week", "week": "week", "days": "day", "day": "day",
    "hours": "hour", "hour": "hour", "hrs": "hour", "minutes": "minute", "minute": "minute", "mins": "minute",
    "min": "minute", "seconds": "second", "second": "second", "secs": "second", "mph": "mph", "km/h": "kmh",
    "kph": "kmh", "°c": "degc", "°f": "degf", "degrees": "deg", "gb": "gb", "mb": "mb", "tb": "tb",
    "gigabytes": "gb", "megabytes": "mb", "terabytes": "tb", "mw": "mw", "gw": "gw", "kw": "kw", "kwh": "kwh",
    "gwh": "gwh", "twh": "twh", "megawatts": "mw", "gigawatts": "gw", "kilowatts": "kw",
}
_PREFIX_UNITS = {"$": "usd", "us$": "usd", "usd": "usd", "€": "eur", "eur": "eur", "£": "gbp", "gbp": "gbp",
                 "¥": "jpy", "₹": "inr"}
_SCALES = {"thousand": 3, "million": 6, "billion": 9, "trillion": 12, "bn": 9, "mn": 6, "tn": 12, "k": 3}
UNIT_WORDS = frozenset(w for name in (*_UNITS, *_SCALES, "hundred") for w in name.split() if w.isalpha())
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNITS), key=len, reverse=True))
_NUMBER = re.compile(
    rf"""(?<![\w.,/\-])
    (?P<cur>US\$|[$€£¥₹]|(?:USD|EUR|GBP)\s?)?
    (?P<num>\d{{1,3}}(?:,\d{{3}})+(?:\.\d+)?|\d+(?:\.\d+)?)(?!\d|[.,]\d)
    (?P<ord>st|nd|rd|th)?
    (?:\s?(?P<scale>thousand|million|billion|trillion|bn|mn|tn)\b|(?(cur)\s?)(?P<short>[kKmMbB])(?![\w]))?
    (?:[\s-]?(?P<unit>{_UNIT_RE})(?![\w]))?
    (?![\w$€£¥])""", re.VERBOSE | re.IGNORECASE)


def _words(text: str) -> list[str]:
    return text.split()


_SMALL = _words("zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
                "sixteen seventeen eighteen nineteen twenty")
_TENS = {"thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}
_WORDS = {w: i for i, w in enumerate(_SMALL)} | _TENS
_WORD_NUMBER_RE = rf"""\b(?P<word>{'|'.join(_WORDS)})
    (?:[\s-](?P<unitword>one|two|three|four|five|six|seven|eight|nine))?
    (?:\s(?P<scale>hundred|thousand|million|billion|trillion))?
    (?:\s(?P<unit>{_UNIT_RE.lower()})(?![\w]))?\b"""
_WORD_NUMBER = re.compile(_WORD_NUMBER_RE, re.VERBOSE)  # run on the lower-cased text: much faster than IGNORECASE
_HEDGES = re.compile(r"(?i)(?:about|around|approximately|approx\.?|roughly|nearly|almost|some|over|more than|"
                     r"less than|fewer than|under|up to|close to|upwards of|estimated|an estimated|~|>|<)\s*$")
_HEDGE_KINDS = [(name, re.compile(rf"(?i)\b(?:{words})\s*$")) for name, words in (
    ("over", r"over|more than|upwards of|exceeding|at least|in excess of|above"),
    ("under", r"under|less than|fewer than|nearly|almost|up to|close to|below"),
    ("about", r"about|around|approximately|approx\.?|roughly|some|estimated"))]
HEDGE_RANGE = {"over": (Decimal(1), Decimal("1.25")), "under": (Decimal("0.8"), Decimal(1)),
               "about": (Decimal("0.9"), Decimal("1.1"))}  # the source's figure / a round claim's (_round)
_QUOTED = re.compile(r"“([^”\n]{3,300})”|\"([^\"\n]{3,300})\"")
_URL = re.compile(r"https?://[^\s<>\"'`]+|www\.[^\s<>\"'`]+")
# times (7:14), scores and ratios (6-2, 24/7), fractions (1-1/2): checked as written, digit for digit
_TOKEN = re.compile(r"(?<![\w.,/:\-])\d+(?:[-/:]\d+)+(?![\w/:\-]|[.,]\d)")
_STOP = set(_words("""about above after again against also among another because been before being below between
both could does doing down during each either from further have having here hers herself himself into itself
just many more most much must neither only other ought ourselves over same said says should some such than
that their theirs them themselves then there these they this those through under until very were what when
where which while whom whose will with within without would your yours year years percent million billion
thousand"""))


@dataclass(frozen=True)
class Fact:
    """One checkable fact: a number (value, unit), a date (year, month, day) or a quoted phrase."""

    kind: str  # number | date | quote | token
    text: str  # as the claim writes it
    value: Decimal | None = None
    unit: str = ""
    rounded: bool = False  # a scale word or a hedge: the source may give more digits
    hedge: str = ""  # over, under or about: the source's figure may be that far from it (HEDGE_RANGE)
    date: tuple[int | None, int | None, int | None] = (None, None, None)
    phrase: str = ""

    @property
    def common(self) -> bool:
        """A number that is easy to find by chance (few significant digits, or a year)."""
        if self.kind != "number" or self.value is None:
            return False
        return significant(self.value) < 3 or (not self.unit and self.value == self.value.to_integral_value()
                                               and 1000 <= self.value <= 2100)


def significant(value: Decimal) -> int:
    """Significant digits of a value (trailing zeros of an integer do not count)."""
    digits = value.normalize().as_tuple().digits
    return max(1, len(digits))


def phrase_key(text: str) -> str:
    """A folded phrase (spelling.fold) reduced to lower-case words separated by single spaces (for quoted-phrase
    search)."""
    return " ".join(re.findall(r"\w+", text.casefold()))


def stem(word: str) -> str:
    """A crude stem: the first six letters, lower-cased (`elections` and `election` meet)."""
    return word.casefold()[:6]


def keywords(text: str) -> set[str]:
    """The stems of a folded text's content words (4+ letters, not stop words or month names); the text went
    through spelling.fold already (a source's, once: not again for each window of it)."""
    words = re.findall(r"[^\W\d_]{4,}", text)
    return {stem(w) for w in words if w.casefold() not in _STOP and w.casefold()[:3] not in MONTHS
            and w.casefold() not in _WORDS}


def _value(num: str, scale: str | None, short: str | None, unit: str | None,
           cur: str | None) -> tuple[Decimal, str] | None:
    try:
        value = Decimal(num.replace(",", ""))
    except InvalidOperation:
        return None
    unit_name = _PREFIX_UNITS.get((cur or "").strip().lower(), "")
    if short:
        if short.lower() == "k":
            scale = "k"
        elif unit_name and short.lower() in "mb":
            scale = "million" if short.lower() == "m" else "billion"
        elif short.lower() == "m" and not unit:
            unit = "m"
        else:
            return None  # `5B`, `3M` without a currency: a name or a code, not a fact
    if scale:
        value *= Decimal(10) ** _SCALES[scale.lower()]
    return value, unit_name or _UNITS.get((unit or "").lower(), "")


def _numbers(text: str) -> list[tuple[Decimal, str, int, bool, str]]:
    """(value, unit, position, written with a scale word or hedge, text) of every number in a text."""
    out = []
    for m in _NUMBER.finditer(text):
        read = _value(m.group("num"), m.group("scale"), m.group("short"), m.group("unit"), m.group("cur"))
        if read is None:
            continue
        hedged = bool(m.group("scale") or m.group("short") or _HEDGES.search(text[max(0, m.start() - 22):m.start()]))
        out.append((read[0], read[1], m.start(), hedged, m.group(0).strip()))
    lower = text.lower()  # the same length but for a few letters (İ); then the slower pattern in any case
    found = _WORD_NUMBER.finditer(lower) if len(lower) == len(text) else \
        re.finditer(_WORD_NUMBER_RE, text, re.VERBOSE | re.IGNORECASE)
    for m in found:
        value = Decimal(_WORDS[m.group("word").lower()] + (_WORDS[m.group("unitword").lower()]
                                                           if m.group("unitword") else 0))
        if m.group("scale"):
            value *= Decimal(10) ** (2 if m.group("scale").lower() == "hundred" else _SCALES[m.group("scale").lower()])
        out.append((value, _UNITS.get((m.group("unit") or "").lower(), ""), m.start(),
                    bool(m.group("scale")) or bool(_HEDGES.search(text[max(0, m.start() - 22):m.start()])),
                    m.group(0)))
    return out


def claim_facts(claim: str) -> list[Fact]:
    """The checkable facts of one claim: quoted phrases, dates, then numbers with their units."""
    return [fact for fact, _ in placed_facts(claim)]


@lru_cache(maxsize=4096)
def placed_facts(claim: str) -> tuple[tuple[Fact, int], ...]:
    """The claim's facts, each with where it starts in the folded text (quotes, dates, then numbers)."""
    text = fold(_URL.sub(" ", claim))
    facts: list[tuple[Fact, int]] = []
    quote_spans = []
    for m in _QUOTED.finditer(text):
        phrase = m.group(1) or m.group(2)
        if len(phrase.split()) >= 2:
            facts.append((Fact("quote", phrase, phrase=phrase_key(phrase)), m.start()))
            quote_spans.append((m.start(), m.end()))
    dates, text = dates_of(blank(text, quote_spans))
    facts += [(Fact("date", written, date=date), pos) for date, pos, written in dates]
    for m in _TOKEN.finditer(text):
        years = years_of(m.group(0))
        facts += [(Fact("number", str(y), value=Decimal(y)), m.start()) for y in years] if years else \
            [(Fact("token", m.group(0), phrase=m.group(0)), m.start())]
    text = _TOKEN.sub(lambda m: " " * len(m.group(0)), text)
    for value, unit, pos, hedged, written in _numbers(text):
        is_word = written[:1].isalpha()
        if is_word and not (unit or hedged and re.search(r"(?i)hundred|thousand|million|billion|trillion", written)):
            continue  # "one of the", "two sides": words, not figures
        hedge = next((name for name, pattern in _HEDGE_KINDS if pattern.search(text[max(0, pos - 22):pos])), "")
        facts.append((Fact("number", written, value=value, unit=unit, rounded=hedged, hedge=hedge), pos))
    return tuple(facts)


def context(text: str, pos: int, reach: int = 40) -> set[str]:
    """The content words (facts.keywords) within `reach` characters of a position of a folded text: what a figure
    is about."""
    return keywords(text[max(0, pos - reach):pos + reach])


MIN_ANCHORS = 1  # claim words that must stand near a common number in the source ...
ALIGNED = 3  # ... but when the claim restates one passage (this many of its words near one figure there),
ALIGNED_SHARE = 0.75  # its common numbers must stand where that share of the best overlap is (the same passage),
ENOUGH = 4  # or this many of its words (a long claim restates several passages: "over 200 items, such as ...")


class SourceText:
    """A source's text indexed for fact lookups: its numbers with positions, its dates, its phrases."""

    def __init__(self, text: str) -> None:
        self.text = fold(text)
        self.dates, rest = dates_of(self.text)
        rest = _URL.sub(lambda m: " " * len(m.group(0)), rest)
        tokens = [(m.group(0), m.start()) for m in _TOKEN.finditer(rest)]
        self.tokens = [token for token, _ in tokens]
        rest = _TOKEN.sub(lambda m: " " * len(m.group(0)), rest)
        self.numbers = [(value, unit, pos) for value, unit, pos, _, _ in _numbers(rest)]
        self.numbers += [(Decimal(year), "", pos) for token, pos in tokens for year in years_of(token)]
        self.numbers += [(Decimal(part), "", pos) for date, pos, _ in self.dates  # a date's year and day
                         for part in (date[0], date[2]) if part is not None]
        self.years = {int(v) for v, u, _ in self.numbers if not u and v == v.to_integral_value()
                      and 1000 <= v <= 2100}
        self._windows: dict[int, set[str]] = {}
        self._best: dict[frozenset[str], int] = {}

    @cached_property
    def phrases(self) -> str:
        """The text as phrase keys, for quotations (made on the first quotation: most claims have none)."""
        return " " + phrase_key(self.text) + " "

    def holds(self, fact: Fact, anchors: set[str]) -> bool:
        """True when the fact occurs in this text (a common number: near the claim's own words)."""
        return self.count(fact, anchors) > 0

    def count(self, fact: Fact, anchors: set[str]) -> int:
        """How many times the fact occurs in this text (a common number: only where the claim's words are near)."""
        if fact.kind == "quote":
            return min(self.phrases.count(f" {piece} ") for piece in _pieces(fact.text)) if _pieces(fact.text) else 0
        if fact.kind == "token":
            return self.tokens.count(fact.phrase)
        if fact.kind == "date":
            return sum(same_date(fact.date, date, self.years) for date, _, _ in self.dates)
        found = 0
        for value, unit, pos in self.numbers:
            if fact.unit and unit and unit != fact.unit or not _same_value(fact, value):
                continue  # a figure the source gives without its unit ("Sheffield on 27") must stand near
            if not fact.common and (unit or not fact.unit) or self._near(pos, anchors):
                found += 1
        return found

    def _near(self, pos: int, anchors: set[str], reach: int = 250) -> bool:
        """Enough of the claim's words stand within reach of this position (the passage the claim restates).
        A text shorter than one window (a program's output, a short note) has nothing to localize: any place."""
        if len(self.text) <= 2 * reach:
            return True
        best = self._best_overlap(anchors)
        need = min(math.ceil(ALIGNED_SHARE * best), ENOUGH) if best >= ALIGNED else min(MIN_ANCHORS, len(anchors))
        return len(anchors & self._window(pos)) >= need

    def _best_overlap(self, anchors: set[str]) -> int:
        """The most claim words found near any one figure of this text."""
        key = frozenset(anchors)
        if key not in self._best:
            self._best[key] = max((len(key & self._window(pos)) for _, _, pos in self.numbers), default=0)
        return self._best[key]

    def _window(self, pos: int, reach: int = 250) -> set[str]:
        if pos not in self._windows:
            self._windows[pos] = keywords(self.text[max(0, pos - reach): pos + reach])
        return self._windows[pos]


def _pieces(quoted: str) -> list[str]:
    """A quotation's parts around ellipses, as phrase keys."""
    return [k for k in (phrase_key(p) for p in re.split(r"\.\.\.|…|\[\.\.\.\]", quoted)) if k]


def _round(value: Decimal) -> bool:
    """A round figure, the kind a hedge goes with: one significant digit, or two ending in 5 (1.5 million)."""
    digits = value.normalize().as_tuple().digits
    return len(digits) == 1 or len(digits) == 2 and digits[-1] == 5


def _same_value(fact: Fact, value: Decimal) -> bool:
    assert fact.value is not None
    if value == fact.value:
        return True
    if fact.hedge and fact.value > 0 and _round(fact.value):
        low, high = HEDGE_RANGE[fact.hedge]
        if low <= value / fact.value <= high:
            return True
    if not fact.rounded or value == 0:
        return False
    digits = significant(fact.value)
    exponent = value.adjusted() - digits + 1
    quantum = Decimal(1).scaleb(exponent)
    return value.quantize(quantum, rounding="ROUND_HALF_UP") == fact.value.quantize(quantum)
