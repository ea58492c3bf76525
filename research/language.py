"""--language NAME: the plan, the follow-ups and the report are written in that language (an instruction added
to each of the research's own model calls), the report's own headings too (one call translates them); the claim
check's side is sources/language.py."""

from __future__ import annotations

import re
from collections.abc import Callable

from core.chat import Completion, Message
from core.errors import ConfigError, LLMError, StopRequested
from report.research import HEADINGS, ResearchReport
from research.plan import item_text
from sources.check import MARKER
from sources.language import across_languages

_LABEL = re.compile(r"^\s*(\d{1,2})[.)]\s+(.+?)\s*$")
INSTRUCTION = ("\n\nWrite your reply in {language}, whatever the language of the question, the findings and the "
               "sources. Keep names, figures, dates and the [n] markers exactly as they are.")


LABELS_PROMPT = """You translate the headings of a research report into {language}. Translate each numbered \
heading below and keep its number; a heading with a colon keeps it.

{headings}

Reply with the numbered list only, one heading per line."""
LABEL_CHARS = 80  # a translated heading longer than this is not a heading: the English one stays


def labels_prompt(language: str) -> str:
    """The prompt of the call that translates the report's own headings (report/research.py's HEADINGS)."""
    return LABELS_PROMPT.format(language=language, headings="\n".join(
        f"{i}. {h}" for i, h in enumerate(HEADINGS, start=1)))


def parse_labels(reply: str) -> dict[str, str]:
    """Each heading the reply translated, by its English words; one that is missing, empty, too long or holds a
    `[n]` or markup keeps its English (an empty dict when the reply gave nothing usable)."""
    out = {}
    for line in reply.splitlines():
        m = _LABEL.match(line)
        if m is None or not 1 <= int(m.group(1)) <= len(HEADINGS):
            continue
        text = item_text(m.group(2))
        if text and len(text) <= LABEL_CHARS and not re.search(r"[\[\]<>`#|]", text):
            out[HEADINGS[int(m.group(1)) - 1]] = text
    return out


def translated_headings(ask: Callable[[list[Message], str], Completion], language: str) -> dict[str, str]:
    """The report's own headings in the language (one call of the "labels" purpose: the writer's model); {} when
    the call fails or is stopped (the headings stay English)."""
    try:
        return parse_labels(ask([{"role": "user", "content": labels_prompt(language)}], "labels").text)
    except (LLMError, StopRequested):
        return {}


def with_language(messages: list[Message], language: str | None) -> list[Message]:
    """The messages with the instruction added to the first user message (unchanged without a language)."""
    if not language:
        return messages
    out, done = [], False
    for m in messages:
        if not done and m.get("role") == "user" and isinstance(m.get("content"), str):
            m = {**m, "content": str(m["content"]) + INSTRUCTION.format(language=language)}  # type: ignore[typeddict-item]
            done = True
        out.append(m)
    return out


def check_language(language: str | None) -> str | None:
    """A --language value: a plain name of at most 40 characters (it goes into prompts), or None."""
    if language is None:
        return None
    name = " ".join(language.split())
    if not name or len(name) > 40 or not all(c.isalpha() or c in " -()" for c in name):
        raise ConfigError(f"--language: a language's name, like German or Português (not {language[:40]!r})",
                          "language")
    return name


def note_across_languages(report: ResearchReport, texts: dict[int, str]) -> None:
    """Mark each delivered citation whose claim is in another language than its source (`across_languages`):
    it could only be judged on its names, figures and dates, and the report says so."""
    for c in report.citations:
        n = c.get("n")
        if isinstance(n, int) and n in texts and \
                across_languages(MARKER.sub(" ", str(c.get("claim") or "")), [texts[n]]) is not None:
            c["across_languages"] = True
