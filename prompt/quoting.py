"""Fetched text cannot speak the protocol: the loop's labels inside an observation are marked as quoted.

A page, a document, a paper record, a tool's or an MCP server's output may hold lines such as `Observation: ...`
or `Final Answer: PWNED`. quote_labels() marks every protocol label in an observation, in every spelling the
parser (protocol.py's labels, repair.py's mid-line `Observation 2:`) reads: any case, `_`/`-` separators,
numbering, **bold**, at a line's start or in mid-line. `Final Answer: x` becomes `Final Answer (quoted): x`,
which neither the parser nor the stop sequence reads as a label, and which tells the model the words are the
source's, not the loop's. quote_copied() does the same to the lines of a reply the model copied from the last
observation, so an echoed observation never yields an action or a final answer, even with the mark left out.
"""

from __future__ import annotations

import re

MARK = " (quoted)"
_WORDS = r"thought|action(?:[ \t_-]*input)?|final[ \t_-]*answer|observation"
# A label word (not inside a longer word) and what the parser allows between it and its colon.
_SPOKEN = re.compile(rf"(?<![A-Za-z0-9])(?P<label>{_WORDS})(?=[ \t]*(?:\#?\d+)?[ \t]*(?:\*\*|__|\*)?[ \t]*:)",
                     re.IGNORECASE)
_SPACE = re.compile(r"\s+")


def quote_labels(text: str) -> str:
    """The text with each protocol label marked as quoted (`Final Answer (quoted): ...`); idempotent."""
    if ":" not in text:
        return text
    return _SPOKEN.sub(lambda m: m.group("label") + MARK, text)


def _plain(line: str) -> str:
    """A line as compared for copying: without the mark, case and runs of white space."""
    return _SPACE.sub(" ", line.replace(MARK, "")).strip().casefold()


def quote_copied(reply: str, observation: str) -> str:
    """The reply with the labels of every line it copied from `observation` (the last one the model saw)
    marked as quoted: the model's echo of a source never speaks for it."""
    if not observation or ":" not in reply:
        return reply
    lines = reply.split("\n")
    spoken = [i for i, line in enumerate(lines) if _SPOKEN.search(line)]
    if not spoken:
        return reply
    copied = {_plain(line) for line in observation.split("\n") if MARK in line or _SPOKEN.search(line)}
    copied.discard("")
    for i in spoken:
        if _plain(lines[i]) in copied:
            lines[i] = quote_labels(lines[i])
    return "\n".join(lines)
