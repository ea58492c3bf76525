"""One source list over every sub-question: deduplicated by normalised URL, renumbered by code, never by a model.

Each sub-question's task numbered its own sources; here they become one SourceLedger (sources/ledger.py),
numbered in the order the sub-questions read them, a source that failed in one task and was read in another
counts as read, one never read successfully gets no number. Each finding's `[k]` markers are rewritten to
those numbers before the writer sees them; after the report is written the numbers are given again in order
of first use in the report, without gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sources.check import MARKER, markers
from sources.ledger import Read, Source, SourceLedger, Work


@dataclass
class Found:
    """What one sub-question's research gave: its answer, its sources (with their text) and those it failed."""

    answer: str | None
    read: list[dict[str, Any]]  # {n, url, title, text, aliases}: the agent's `sources` event
    failed: list[dict[str, Any]]  # {url, title, error}: its record's sources that were not read


def pool(found: Iterable[Found]) -> SourceLedger:
    """Every source any sub-question read, once, numbered in reading order; failed ones kept unnumbered."""
    ledger = SourceLedger()
    for f in found:
        for s in sorted(f.read, key=lambda s: int(s.get("n") or 0)):
            ledger.note(Read(str(s["url"]), str(s.get("title") or ""), text=str(s.get("text") or ""),
                             aliases=tuple(str(a) for a in s.get("aliases") or ()),
                             retracted=str(s.get("retracted") or ""), work=Work.of(s.get("work"))))
        for s in f.failed:
            ledger.note(Read(str(s["url"]), str(s.get("title") or ""), error=str(s.get("error") or "not read")))
    return ledger


def rewrite_markers(text: str, number: Callable[[int], int | None]) -> str:
    """Each `[a, b]` marker of the text with its numbers mapped (None: dropped; an empty marker goes)."""
    def repl(m: Any) -> str:
        mapped = [n for n in dict.fromkeys(number(k) for k in markers(m.group(0))) if n is not None]
        return "[" + ", ".join(str(n) for n in mapped) + "]" if mapped else ""
    return MARKER.sub(repl, text)


def remap_finding(f: Found, ledger: SourceLedger) -> str:
    """The sub-question's answer with its own `[k]` markers rewritten to the pooled numbers (a `[k]` that names
    no source its task read is dropped: the writer never sees a number that stands for nothing)."""
    urls = {int(s["n"]): str(s["url"]) for s in f.read if s.get("n") is not None}

    def number(k: int) -> int | None:
        source = ledger.find(urls[k]) if k in urls else None
        return source.n if source is not None and source.read else None
    return rewrite_markers(f.answer or "", number)


def first_use(body: str, valid: Iterable[int]) -> dict[int, int]:
    """Old number -> new number, in order of first use in the body (only numbers of read sources)."""
    known, order = set(valid), dict[int, int]()
    for m in MARKER.finditer(body):
        for n in markers(m.group(0)):
            if n in known and n not in order:
                order[n] = len(order) + 1
    return order


def renumbered(ledger: SourceLedger, order: Mapping[int, int]) -> tuple[SourceLedger, list[Source]]:
    """A ledger holding the cited sources numbered as `order` says (1..k), then the rest read, not cited."""
    out = SourceLedger()
    cited = sorted((s for s in ledger.read_sources() if s.n in order), key=lambda s: order[s.n or 0])
    for s in cited:
        out.note(Read(s.url, s.title, text=s.text, aliases=tuple(s.aliases), retracted=s.retracted, work=s.work))
    return out, [s for s in ledger.read_sources() if s.n not in order]
