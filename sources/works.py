"""A claim that names the work it cites: "Piwowar et al. (2018) estimate that ... [1]", "(Bran and Schwaller,
2024)", "Boettiger's paper The forecast trap ...", "the report annual_review_2023.pdf says ...".

What a source is, besides its text, counts as its words when a claim names it: a paper's authors (surnames,
"et al."), year, title, venue and DOI (ledger.Work, from search_papers), a document's file name, a page's
title in quotation marks. `as_cited` reads the claim's citation phrases: a first author or year given as the
cited paper's that is not the paper's is contradicted, whatever else its text mentions (or wrong_source when
another paper the task read is that one); the phrases, titles, venue and DOI are taken out of the claim
before its words are looked for in the text, and the words of what the source is, with the nouns and
reporting verbs of scholarly writing ("the study / the authors report / estimate / find", "the file says"),
are not required of the passage.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from sources.ledger import Work
from sources.lexicon import STOP
from sources.reading import read_words
from sources.spelling import fold, plain


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


_UPPER = "A-ZÀ-ÖØ-Þ"
_PARTICLES = _words("van von de der den da di du del della la le ter ten dos das")
_PARTICLE = rf"(?:(?:{'|'.join(sorted(_PARTICLES))})\s+)"
_NAME = rf"{_PARTICLE}*[{_UPPER}][^\W\d_]*(?:[-'’][{_UPPER}]?[^\W\d_]+)*"
_AUTHORS = (rf"(?P<first>{_NAME})(?P<rest>\s+et\s+al\.?|(?:\s*,\s*{_NAME})*\s*,?\s+(?:and|&)\s+(?P<second>{_NAME}))?")
_YEAR = r"(?P<year>(?:1[5-9]|20)\d\d)[a-z]?"
_KIND = r"(?:paper|study|article|work|review|analysis|survey|preprint|book|report|thesis|meta-analysis)"
# (pattern, who may be named: "first" author, or "any" author for a possessive); each on the folded claim
_PHRASES = [(re.compile(p), who) for p, who in (
    (rf"\(\s*{_AUTHORS}\s*,?\s+{_YEAR}\s*\)", "first"),  # (Piwowar et al., 2018)
    (rf"{_AUTHORS}\s*\(\s*{_YEAR}\s*\)", "first"),  # Piwowar et al. (2018)
    (rf"\b{_KIND}\s+(?:\w+\s+)?by\s+{_AUTHORS}(?:\s*\(\s*{_YEAR}\s*\))?", "first"),  # the paper by Ammar et al.
    (rf"(?P<first>{_NAME})\s+et\s+al\b\.?", "first"),  # Piwowar et al. (no year)
    (rf"(?P<first>{_NAME})['’]s?\s+(?:(?:{_YEAR})\s+)?{_KIND}", "any"),  # Boettiger's (2021) paper
    (rf"(?i:\b(?:in\s+)?(?:the|their|this|its|a|his|her)\s+){_YEAR}\s+{_KIND}", "first"),  # their 2018 study
)]
_SCHOLARLY = _words("""paper papers study studies article articles author authors researcher researchers
investigator investigators review analysis survey preprint manuscript work works team findings finding result
results abstract journal publication published publish publishes estimate estimated estimates estimating report
reports reporting find finds found show shows showed shown suggest suggests suggested conclude concluded concludes
argue argued argues demonstrate demonstrated observe observed note noted propose proposed claim claims claimed
describe described present presented indicate indicated document documented examine examined investigate
investigated analyze analyzed analyse analysed assess assessed discuss discussed highlight highlighted reveal
revealed calculate calculated write wrote identify identified explore explored evaluate evaluated quantify
quantified et al file files document documents pdf memo spreadsheet sheet slides presentation says say said
states stated writes""")


@dataclass(frozen=True)
class About:
    """What one source is, besides its text: a paper's Work (authors, year, title, venue, DOI), and the labels
    a claim may name it by: as written (a paper's title, venue and DOI, a document's file name), or `quoted`
    only (a page's title: a claim's words that happen to be its title are still the claim's)."""

    work: Work | None
    labels: tuple[str, ...] = ()
    quoted: tuple[str, ...] = ()

    @property
    def checkable(self) -> bool:
        """It has authors or a year a claim's citation phrase can be held to."""
        return self.work is not None and (bool(self.work.authors) or self.work.year is not None)


def about(title: str, url: str, work: Work | None) -> About:
    """A source as the check knows it: its title and, for a workspace file, its file name; a paper's work."""
    labels = [title, work.title, work.venue, work.doi] if work else []
    if not re.match(r"(?i)^https?://", url):
        name = url.replace("\\", "/").rsplit("/", 1)[-1].split(", §", 1)[0].split("#", 1)[0]
        labels += [name, name.rsplit(".", 1)[0].replace("_", " ").replace("-", " ")]
    return About(work, _distinct(labels), _distinct([] if work else [title]))


def _distinct(labels: Sequence[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(" ".join(x.split()) for x in labels if x and x.strip()))


@dataclass(frozen=True)
class Named:
    """A claim read for the works it names: the claim without them, the words not required of its passage, and
    a verdict (contradicted or wrong_source) with its reason when it names a work that is not the cited one."""

    claim: str
    spare: frozenset[str] = frozenset()
    verdict: str = ""
    reason: str = ""


def as_cited(claim: str, cited: Sequence[About], others: Mapping[int, About]) -> Named:
    """The claim against what its cited sources are (their works, titles, file names); `others` are the task's
    other sources, by number, for a citation phrase that names one of them."""
    text = fold(claim)
    works = [a.work for a in cited if a.checkable and a.work is not None]
    spans: list[tuple[int, int]] = []
    for pattern, who in _PHRASES if works else ():
        for m in pattern.finditer(text):
            if any(a < m.end() and m.start() < b for a, b in spans) or not _is_phrase(m):
                continue
            spans.append((m.start(), m.end()))
            if not any(_names(m, who, w) for w in works):
                return _wrong(m, who, works[0], others)
    named = [(x, "?") for a in cited for x in a.labels if " " in x or "." in x] + \
        [(x, "") for a in cited for x in a.quoted]  # a title, venue, DOI, file name; a page's title in quotes
    for label, optional in named:
        words = r"\W+".join(map(re.escape, fold(label).split()))
        for m in re.finditer(rf"[\"“']{optional}{words}[\"”']{optional}", text, re.IGNORECASE):
            if not any(a < m.end() and m.start() < b for a, b in spans):
                spans.append((m.start(), m.end()))
    spare: frozenset[str] = frozenset()
    if works or spans:  # the claim names the source: how it says what it says is no word of the passage
        spare = _keys(_SCHOLARLY) | _keys(x for a in cited for x in (*a.labels, *a.quoted,
                                                                    *(a.work.authors if a.work else ())))
    for a, b in sorted(spans, reverse=True):
        text = text[:a] + " " + text[b:]
    return Named(" ".join(text.split()) if spans else claim, frozenset(spare))


def _keys(texts: Iterable[str]) -> frozenset[str]:
    """The word keys of these texts (no direction words: "the growth paper" excuses no "grew")."""
    return frozenset(w.key for x in texts for w in read_words(x) if w.key and not w.direction)


def _is_phrase(m: re.Match[str]) -> bool:
    """A citation phrase, not a sentence's first word and a year: its name is no common word ("In (2018)")."""
    first = m.groupdict().get("first")
    return not first or plain(first.split()[-1]) not in STOP and plain(first) not in _SCHOLARLY


def _names(m: re.Match[str], who: str, work: Work) -> bool:
    """The phrase names this work: its year, and its first author (a possessive: any of its authors)."""
    year = m.groupdict().get("year")
    if year and work.year is not None and int(year) != work.year:
        return False
    first = m.groupdict().get("first")
    if not first or not work.authors:
        return True
    authors = [surname(a) for a in work.authors]
    named = surname(first)
    if who == "any":
        return named in authors
    second = m.groupdict().get("second")
    return authors[0] == named and (not second or surname(second) in authors[1:])


def _wrong(m: re.Match[str], who: str, work: Work, others: Mapping[int, About]) -> Named:
    """The phrase names another work than the cited one: wrong_source when the task read that one, else
    contradicted, the reason naming both."""
    said = " ".join(m.group(0).split())
    for n, other in others.items():
        if other.checkable and other.work is not None and _names(m, who, other.work):
            return Named("", verdict="wrong_source", reason=f"\u2018{said}\u2019 is [{n}], not the paper it cites")
    year = m.groupdict().get("year")
    if year and work.year is not None and int(year) != work.year:
        why = f"the paper it cites is from {work.year}, not {year}"
    else:
        why = f"the paper it cites is by {reference(work)}"
    return Named("", verdict="contradicted", reason=f"\u2018{said}\u2019: {why}")


def reference(work: Work) -> str:
    """A paper as a citation names it: `Piwowar et al. (2018)`, `Bran and Schwaller`, `Smith (2020)`."""
    names = [n for n in (_family(a) for a in work.authors) if n]
    who = names[0] + (" et al." if len(names) > 2 else f" and {names[1]}" if len(names) == 2 else "") if names \
        else work.title
    return who + (f" ({work.year})" if work.year is not None else "")


def _family(author: str) -> str:
    """The family name as written: `Heather Piwowar` -> Piwowar, `Piwowar, H.` -> Piwowar, `J. van Dijk` -> van
    Dijk."""
    author = re.sub(r",?\s+(?:Jr|Sr|II|III|IV)\.?$", "", " ".join(author.split()))
    if "," in author:
        return author.split(",", 1)[0].strip()
    words = author.split()
    at = len(words) - 1
    while at > 0 and words[at - 1] in _PARTICLES:
        at -= 1
    return " ".join(words[at:])


def surname(author: str) -> str:
    """The last word of a family name, plain (no accents, lower case): what a claim's "Name et al." must match."""
    family = _family(author) if " " in author.strip() or "," in author else author
    return plain(re.split(r"[\s]+", family.strip())[-1]) if family.strip() else ""
