"""Check and repair before delivery: every claim against the text of the source it cites (sources/check.py).

Failing claims (fabricated, not_read, wrong_source, unsupported, contradicted) go back to the writer once, each
named with its verdict, why, and what the sources say (for a wrong source: the sources that do hold it). The
revised report is checked again; a claim that still fails is marked where it stands (`⚠ contradicted`, or
`⚠ unsupported (verdict)`), and a citation of a source that does not exist loses its number (it could only
point at a wrong one).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from report.research import MARK
from report.sources import verdict_label
from sources.check import (
    CONTRADICTED,
    FABRICATED,
    FAILING,
    MARKER,
    NOT_READ,
    SUPPORTED,
    WRONG_SOURCE,
    Citation,
    check_citations,
    markers,
)
from sources.ledger import SourceLedger

PROMPT = """Your report below was checked claim by claim against the text of the sources it cites. These \
claims failed the check:

{failures}

Revise the report. For each failing claim: re-point it to a source that supports it, drop it, or rewrite \
it to say only what the source it cites says. Change nothing else, keep the sections and the [n] markers \
of the other claims. Reply with the whole revised report in Markdown and nothing else.

Sources:
{headers}

Report:
{report}"""
CONTRADICTED_MARK = "⚠ contradicted"
_MARKED = re.compile(r"\s*(?:" + re.escape(MARK) + r"(?: \([a-z ]+\))?|" + re.escape(CONTRADICTED_MARK) + ")")
_CLOSING = re.compile(r"(?P<stop>[.!?][\"”’)]*)(?P<markers>(?:\s*\[[\d,;\s–-]+\])*)\s*$")
_LEADING = re.compile(r"^(?P<item>\s*(?:[-*+•]|\d{1,2}[.)])\s+)?(?P<marks>(?:\[\d{1,3}(?:\s*[,;–-]\s*\d{1,3})*\]\s*)+)"
                      r"(?P<rest>.*)$")
_FIRST_STOP = re.compile(r"[.!?](?=[\"”’)]*(?:\s|$))")
_HEADING = re.compile(r"^#{1,6}\s")
_FILLER = " \t-–—:·,;|*_`()"
PASSAGE = 300  # characters of the cited source's best passage shown with an unsupported claim


@dataclass(frozen=True)
class Failing:
    """One failing claim of a check: its text, its verdict (the worst of its citations) and what to tell."""

    claim: str
    verdict: str
    hint: str


def failing(citations: Sequence[Citation], ledger: SourceLedger) -> list[Failing]:
    """The failing claims, once each, with a hint the writer can act on."""
    out: dict[str, Failing] = {}
    for c in citations:
        if c.verdict not in FAILING or c.claim in out:
            continue
        out[c.claim] = Failing(c.claim, c.verdict, _hint(c, ledger))
    return list(out.values())


def _hint(c: Citation, ledger: SourceLedger) -> str:
    if c.verdict == FABRICATED:
        return f"[{c.n}] is not one of the sources; cite one of those listed, or drop the claim"
    if c.verdict == NOT_READ:
        return f"{c.url} was never read: write no URL; cite a listed source by its number, or drop the claim"
    holders = supporting(c.claim, ledger)
    if c.verdict == WRONG_SOURCE and holders:
        return "its facts are in " + ", ".join(f"[{n}]" for n in holders) + f", not in [{c.n}]"
    said = " ".join(c.passage.split())[:PASSAGE]
    why = f"{c.reason}; " if c.reason else ""
    if c.verdict == CONTRADICTED:
        return f"[{c.n}] says otherwise: {why}it says: \u201c{said}\u201d"
    return f"{why}no source read states it; [{c.n}] says: \u201c{said}\u201d" if said else \
        f"{why}no source read states it"


def cited_lines(text: str, ledger: SourceLedger) -> str:
    """Every line that cites a source made a claim the check reads, or left out. A line that starts with its
    `[n]` (`[2] notes.md, § Dredging [3]`, `- [1] The Rhine ...`) is no claim to the check (it reads it as an
    entry of a source list), yet its numbers would count as cited: with nothing but markers or a source's own
    line it is left out (and a section it leaves empty goes too); with words of its own its markers move after
    its first sentence, where the check reads them."""
    out: list[str] = []
    dropped = False
    for line in text.split("\n"):
        m = _LEADING.match(line)
        if m is None:
            out.append(line)
            continue
        rest = m.group("rest").strip().lstrip(_FILLER)
        if _is_source_line(MARKER.sub(" ", rest), ledger):
            dropped = True
            continue
        stop = _FIRST_STOP.search(rest)
        at = stop.start() if stop is not None else len(rest)
        out.append(f"{m.group('item') or ''}{rest[:at].rstrip()} {m.group('marks').strip()}{rest[at:]}")
    return _without_empty_sections(out) if dropped else text


def _is_source_line(text: str, ledger: SourceLedger) -> bool:
    """True for text with no words, or that is (the start of) a source's address or title."""
    said = " ".join(text.split()).strip(_FILLER)
    if not re.search(r"\w\w", said):
        return True
    cut = said[:-1].rstrip() if said.endswith("…") else None  # `notes.md, § Notes on …`: a name cut short
    names = (" ".join(name.split()).strip(_FILLER) for s in ledger.sources for name in (s.url, s.title))
    return any(name and (said.startswith(name) or (cut and name.startswith(cut))) for name in names)


def _without_empty_sections(lines: list[str]) -> str:
    """The lines without a heading whose section holds nothing but blank lines."""
    kept: list[str] = []
    for i, line in enumerate(lines):
        if _HEADING.match(line):
            following = next((x for x in lines[i + 1:] if x.strip()), "")
            if not following or _HEADING.match(following):
                continue
        kept.append(line)
    return re.sub(r"\n{3,}", "\n\n", "\n".join(kept))


def unmarked(claim: str) -> str:
    """The claim without the mark this module put after it."""
    return _MARKED.sub("", claim).strip()


def bare(claim: str) -> str:
    """The claim without its `[n]` markers."""
    return " ".join(MARKER.sub(" ", unmarked(claim)).split())


def supporting(claim: str, ledger: SourceLedger) -> list[int]:
    """The read sources whose text supports the claim's facts on its own."""
    text = bare(claim)
    out = []
    for s in ledger.read_sources():
        verdicts = [c.verdict for c in check_citations(f"{text} [{s.n}]", ledger) if c.n == s.n]
        if verdicts and verdicts[0] == SUPPORTED:
            out.append(s.n or 0)
    return out


def repair_prompt(report: str, failures: Sequence[Failing], headers: Sequence[str]) -> str:
    """The repair call's prompt: the failing claims with their verdicts and hints, the sources, the report."""
    lines = [f"- \u201c{bare(f.claim)}\u201d ({', '.join(_cited(f.claim)) or 'no marker'}): "
             f"{verdict_label(f.verdict)}: {f.hint}" for f in failures]
    return PROMPT.format(failures="\n".join(lines), headers="\n".join(headers), report=report.strip())


def _cited(claim: str) -> list[str]:
    return [m.group(0) for m in MARKER.finditer(claim)]


def mark(report: str, citations: Sequence[Citation], ledger: SourceLedger) -> str:
    """The report with `⚠ contradicted` or `⚠ unsupported (verdict)` after each claim that fails, fabricated
    numbers removed."""
    for f in failing(citations, ledger):
        claim = f.claim
        if f.verdict == FABRICATED:
            claim = re.sub(r"\s*" + MARKER.pattern, lambda m: _keep_read(m.group(0), ledger), claim).strip()
        label = "" if f.verdict == "unsupported" else f" ({verdict_label(f.verdict)})"
        report = report.replace(f.claim, marked(claim, CONTRADICTED_MARK if f.verdict == CONTRADICTED else
                                                MARK + label), 1)
    return report


def marked(claim: str, mark_text: str) -> str:
    """The claim with the mark after its words and markers, before its closing stop (so it stays one sentence)."""
    m = _CLOSING.search(claim)
    if m is None:
        return f"{claim} {mark_text}"
    return f"{claim[:m.start()]}{m.group('markers')} {mark_text}{m.group('stop')}"


def _keep_read(marker: str, ledger: SourceLedger) -> str:
    """A marker keeping only the numbers of sources that were read ("" when none is left)."""
    kept = [n for n in markers(marker) if ledger.number(n) is not None]
    return " [" + ", ".join(map(str, kept)) + "]" if kept else ""
