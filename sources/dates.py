"""Dates as texts write them (March 3, 2021; 3 March 2021; 2021-03-03; 01.08.2019; march 3 1980 in a lower-cased
text; Sept. 4) and spans of years (1991-2000, 2007-11): what facts.py reads a claim's and a source's dates with.
"""

from __future__ import annotations

import re
from functools import cache

Date = tuple[int | None, int | None, int | None]  # year, month, day: any may be unknown

MONTHS = {"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10,
          "nov": 11, "dec": 12}
_MONTH = (r"(?P<month>Jan(?:uary|\.)?|Feb(?:ruary|\.)?|Mar(?:ch|\.)?|Apr(?:il|\.)?|May|June?|July?|Aug(?:ust|\.)?"
          r"|Sep(?:t(?:ember)?)?\.?|Oct(?:ober|\.)?|Nov(?:ember|\.)?|Dec(?:ember|\.)?)")
_DAY = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>1\d{3}|20\d{2})"
_DATE_PATTERNS = (
    r"\b(?P<year>\d{4})-(?P<mon>[01]\d)-(?P<day>[0-3]\d)\b",
    r"(?<![\d.])(?P<day>[0-3]?\d)\.(?P<mon>[01]?\d)\.(?P<year>\d{4})\b",  # 01.08.2019
    rf"\b{_MONTH}\s+{_DAY},?\s+{_YEAR}\b",
    rf"\b{_DAY}\s+(?:of\s+)?{_MONTH},?\s+{_YEAR}\b",
    rf"\b{_MONTH}\s+{_DAY}\b(?!\s*[:\d])",
    rf"\b{_DAY}\s+(?:of\s+)?{_MONTH}\b",
    rf"\b{_MONTH},?\s+(?:of\s+)?{_YEAR}\b",
)
_DATES = [re.compile(p) for p in _DATE_PATTERNS]
# a lower-cased text ("november 1980") is read in any case, but a lower-case "may" or "march" only with a year
@cache
def _any_case_dates() -> list[re.Pattern[str]]:
    """The date patterns in any case (compiled on the first lower-cased text: not at import)."""
    return [re.compile(p, re.IGNORECASE) for p in _DATE_PATTERNS]



_LOWER_MONTH = re.compile(r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?,?\s+(?:of\s+)?\d|"
                          r"\d(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)")


_ON = re.compile(r"\b(?:on|by|until|since|from|before|after)\s+$")


def blank(text: str, spans: list[tuple[int, int]]) -> str:
    out = list(text)
    for start, end in spans:
        out[start:end] = " " * (end - start)
    return "".join(out)


_MONTH_NAME = re.compile(r"\b(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)")
_MONTH_NAME_ANY_CASE = re.compile(_MONTH_NAME.pattern, re.IGNORECASE)


def _month_regions(text: str, any_case: bool) -> list[tuple[int, int]]:
    """The stretches of a text around its month names (where a date naming its month can be), merged."""
    out: list[tuple[int, int]] = []
    for m in (_MONTH_NAME_ANY_CASE if any_case else _MONTH_NAME).finditer(text):
        start, end = max(0, m.start() - 12), min(len(text), m.start() + 40)
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], end)
        else:
            out.append((start, end))
    return out


def dates_of(text: str) -> tuple[list[tuple[Date, int, str]], str]:
    """The dates of a text with their positions, and the text with them blanked out."""
    found: list[tuple[Date, int, str]] = []
    spans: list[tuple[int, int]] = []
    any_case = bool(_LOWER_MONTH.search(text))
    patterns = _any_case_dates() if any_case else _DATES
    regions = _month_regions(text, any_case)
    for n, pattern in enumerate(patterns):
        for m in (pattern.finditer(text) if n < 2 else  # numeric dates; then the ones naming a month, near one
                  (m for start, end in regions for m in pattern.finditer(text, start, end))):
            if any(s <= m.start() < e or m.start() <= s < m.end() for s, e in spans):
                continue
            g = m.groupdict()
            if g.get("month") in ("may", "march", "mar") and not g.get("year") and not _ON.search(text, 0, m.start()):
                continue  # "5 may be", "march 3 miles": verbs; "on march 19" is a date
            month = int(g["mon"]) if g.get("mon") else MONTHS[g["month"][:3].lower()]
            day = int(g["day"]) if g.get("day") else None
            if day is not None and not 1 <= day <= 31 or not 1 <= month <= 12:
                continue
            found.append(((int(g["year"]) if g.get("year") else None, month, day), m.start(), m.group(0)))
            spans.append((m.start(), m.end()))
    return found, blank(text, spans)


_YEAR_SPAN = re.compile(r"(1\d{3}|20\d{2})[-/](\d{2}|1\d{3}|20\d{2})")


def years_of(token: str) -> list[int]:
    """The two years of a span of years (1991-2000, 2007-11), or none."""
    m = _YEAR_SPAN.fullmatch(token)
    if not m:
        return []
    first, second = int(m.group(1)), int(m.group(2))
    if second < 100:
        second += first - first % 100 + (100 if second < first % 100 else 0)
    return [first, second] if second > first else []



def same_date(claim: Date, source: Date,
               years: set[int]) -> bool:
    year, month, day = claim
    s_year, s_month, s_day = source
    if month != s_month or (day is not None and s_day != day):
        return False
    if year is None or s_year == year:
        return True
    return s_year is None and year in years  # "on March 3" in a page that names 2021 elsewhere
