"""Small text helpers shared by the model adapters, the memory, the tools and the CLI (imports nothing of ours)."""

from __future__ import annotations

import re
import unicodedata
from typing import Any


def truncate_middle(text: str, max_chars: int, note: str = "") -> str:
    """Keep the head and tail of text within max_chars, with a marker saying how much was cut.

    This is the one truncation helper: tools, memory and provider error messages all use it.
    """
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    marker_len = 120 + len(note)
    keep = max(max_chars - marker_len, 0)
    head = keep * 2 // 3
    tail = keep - head
    cut = len(text) - head - tail
    lines_cut = text.count("\n", head, len(text) - tail)
    lines = f" ({lines_cut:,} line{'s' if lines_cut != 1 else ''})" if lines_cut else ""  # never "(0 lines)"
    marker = f"\n\n[... {cut:,} characters{lines} cut{'; ' + note if note else ''} ...]\n\n"
    return text[:head] + marker + (text[len(text) - tail:] if tail else "")


def money(cost: float | None) -> str:
    """A dollar amount as every line and report shows it: `$0.0123` below a dollar, `$12.34` above, and `n/a`
    for an unknown cost (a model without a known price): never a guessed `$0.0000`."""
    if cost is None:
        return "n/a"
    return f"${cost:.4f}" if cost < 1 else f"${cost:,.2f}"


def human_size(size: int) -> str:
    """A byte count as people read it: 532 B, 12.3 KB, 4.5 MB."""
    if size < 1024:
        return f"{size:,} B"
    value = size / 1024
    for unit in ("KB", "MB"):
        if value < 1024:
            return f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:,.1f} GB"


_NAMED_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# Control characters but newline and tab, line and paragraph separators, lone surrogates, and the explicit
# bidirectional embeddings, overrides and isolates (they reorder what follows them on the screen).
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(ch: str) -> str:
    code = ord(ch)
    return _NAMED_ESCAPES.get(ch) or (f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}")


def report_safe(text: str) -> str:
    """Untrusted text (a page, model output, a tool's output, a stored title) made safe to write into a report or
    the run store: the characters terminal_safe escapes (C0 and C1 controls such as ESC and the 8-bit CSI U+009B,
    line and paragraph separators, bidirectional embeddings, overrides and isolates U+202A-U+202E and
    U+2066-U+2069, lone surrogates) are removed; newlines and tabs stay, a CRLF becomes a newline."""
    return _UNSAFE.sub("", text.replace("\r\n", "\n"))


def report_data(value: Any) -> Any:
    """report_safe() applied to every string (dict keys too) of a JSON-like value, before it is written."""
    if isinstance(value, str):
        return report_safe(value)
    if isinstance(value, dict):
        return {report_data(k): report_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [report_data(v) for v in value]
    return value


def terminal_safe(text: str, *, one_line: bool = False) -> str:
    """Untrusted text (a page, model output, a tool's output, a stored title) made safe to print.

    Control characters are shown escaped (ESC as `\\x1b`, a carriage return as `\\r`), so text cannot move the
    cursor, retitle the window, plant hidden links or rewrite a line printed before it; so are lone surrogates,
    line and paragraph separators and bidirectional overrides. Newlines and tabs stay, unless `one_line`
    (a file name, a table cell): then they are escaped too, as is every other invisible format character.
    """
    if not one_line:
        return _UNSAFE.sub(lambda m: _escaped(m.group()), text.replace("\r\n", "\n"))
    return "".join(_escaped(ch) if ch in "\n\t" or _UNSAFE.match(ch) or unicodedata.category(ch) == "Cf" else ch
                   for ch in text)


_AGE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*", re.ASCII)
_AGE_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
MAX_AGE_DAYS = 36_500  # a hundred years: any older age means "everything", and larger ones overflow dates


def parse_age(text: str) -> float:
    """An age such as `30d`, `12h`, `2w`, `90m` or `45s` in seconds (at most MAX_AGE_DAYS); ValueError with one
    clear line for anything else."""
    match = _AGE.fullmatch(text.lower())
    if not match:
        raise ValueError(f"{text!r} is not an age such as 30d, 12h, 2w, 90m or 45s")
    seconds = float(match.group(1)) * _AGE_UNITS[match.group(2)]
    if seconds > MAX_AGE_DAYS * 86400:
        raise ValueError(f"{text!r} is more than {MAX_AGE_DAYS:,} days; give a smaller age")
    return seconds
