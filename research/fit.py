"""The writer's prompt fitted to its model's window (a models-file alias's context_window, the window a local
server reports or names in a refusal, the price table's; prompt/window.py's budget, as a task's memory keeps
to): the findings are cut at whole sentences, each to a fair share of the room, and the lines of sources no
kept finding cites are left out. What was cut is said in the report."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prompt.tokens import TokenEstimator
from research.write import SENTENCE_END
from sources.check import markers
from sources.ledger import SourceLedger

CUT = " …"  # ends a finding cut inside its first sentence
MIN_SHARE = 120  # characters of a finding below which the findings cannot be said to be given


@dataclass
class Fitted:
    """The sources' lines and the findings as the writer's prompt holds them, and what was cut (None: nothing)."""

    headers: list[str]
    findings: list[tuple[str, str]]
    cut: str | None = None


def fit(ledger: SourceLedger, findings: Sequence[tuple[str, str]], fixed_chars: int, room_tokens: int,
        model: str | None = None) -> Fitted | None:
    """The headers and findings within `room_tokens` of prompt besides `fixed_chars` of instructions and question;
    None when not even a sentence of each finding fits."""
    headers = [(s.n or 0, s.header()) for s in ledger.read_sources()]
    whole = Fitted([h for _, h in headers], list(findings))
    room = TokenEstimator().chars_for(room_tokens, model) - fixed_chars
    if _size(whole) <= room:
        return whole
    cited = {n for _, a in findings for n in markers(a)}
    lines = [h for n, h in headers if n in cited]
    left = room - sum(len(h) + 1 for h in lines) - sum(len(q) + 8 for q, _ in findings)
    shares = _shares([len(a.strip()) for _, a in findings], left)
    if shares is None:
        return None
    kept = [(q, _cut(a.strip(), share)) for (q, a), share in zip(findings, shares, strict=True)]
    cited = {n for _, a in kept for n in markers(a)}
    out = Fitted([h for n, h in headers if n in cited], kept)
    out.cut = _said(findings, kept, len(headers) - len(out.headers), room_tokens)
    return out


def _size(f: Fitted) -> int:
    return sum(len(h) + 1 for h in f.headers) + sum(len(q) + len(a) + 8 for q, a in f.findings)


def _shares(lengths: list[int], room: int) -> list[int] | None:
    """Each finding's characters: the short ones whole, the room left shared evenly by the long ones."""
    shares, left = [0] * len(lengths), room
    order = sorted(range(len(lengths)), key=lambda i: lengths[i])
    for k, i in enumerate(order):
        share = left // (len(order) - k)
        if share < min(lengths[i], MIN_SHARE):
            return None
        shares[i] = min(lengths[i], share)
        left -= shares[i]
    return shares


def _cut(text: str, share: int) -> str:
    """The finding's whole sentences (with their markers) within `share` characters; inside the first sentence,
    cut at a word with ` …`."""
    if len(text) <= share:
        return text
    ends = [m.end() for m in SENTENCE_END.finditer(text) if m.end() <= share]
    if ends:
        return text[:ends[-1]].rstrip()
    return text[:max(share - len(CUT), 0)].rsplit(" ", 1)[0].rstrip() + CUT


def _said(findings: Sequence[tuple[str, str]], kept: Sequence[tuple[str, str]], dropped: int, room: int) -> str:
    """`The writer's model holds about 1,000 tokens of prompt: 2 of 3 findings were cut to their first whole
    sentences (1,200 of 4,000 characters kept) and the lines of 4 sources no kept finding cites were left out.`"""
    cut = sum(1 for (_, a), (_, b) in zip(findings, kept, strict=True) if len(b) < len(a.strip()))
    whole, left = sum(len(a.strip()) for _, a in findings), sum(len(b) for _, b in kept)
    sources = f"; the lines of {dropped} source{'s' if dropped != 1 else ''} no kept finding cites were left " \
              "out" if dropped else ""
    return (f"The writer's model holds about {room:,} tokens of prompt: {cut} of {len(findings)} finding"
            f"{'s' if len(findings) != 1 else ''} were cut to their first whole sentences ({left:,} of {whole:,} "
            f"characters kept){sources}, so the report may leave out what the rest said.")
