"""--language NAME: the plan, the follow-ups and the report are written in that language (an instruction added
to each of the research's own model calls); the claim check's side is sources/language.py."""

from __future__ import annotations

from core.chat import Message
from core.errors import ConfigError
from report.research import ResearchReport
from sources.check import MARKER
from sources.language import across_languages

INSTRUCTION = ("\n\nWrite your reply in {language}, whatever the language of the question, the findings and the "
               "sources. Keep names, figures, dates and the [n] markers exactly as they are.")


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
