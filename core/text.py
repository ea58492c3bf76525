"""Small text helpers shared by the model adapters, the memory and the tools (imports nothing of ours)."""

from __future__ import annotations


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
    marker = f"\n\n[... {cut:,} characters ({lines_cut:,} lines) cut{'; ' + note if note else ''} ...]\n\n"
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
