"""The plan: one model call that breaks the question into sub-questions, returned as a numbered list."""

from __future__ import annotations

import re

LEAST, MOST = 3, 8  # sub-questions the prompt asks for by default; --breadth N asks for at most N
PROMPT = """You plan a piece of research. Break the question below into {span} sub-questions that can each be \
researched {where} on its own and that together answer the question.{files}

Question: {question}

Reply with the sub-questions only, as a numbered list (1. ..., 2. ...), one per line."""
_ITEM = re.compile(r"^\s*(?:\d{1,2}[.)]|[-*•])\s+(.+?)\s*$")
_EMPHASIS = re.compile(r"^[*_]+|[*_]+$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")  # escape sequences and the like: never printed, never a task


def plan_prompt(question: str, breadth: int, files: list[str], docs: bool = False, web: bool = True,
                papers: str = "off") -> str:
    """The planning call's prompt: asks for LEAST to `breadth` sub-questions (exactly `breadth` when it is
    smaller than LEAST); with `docs` (--docs), researched in the user's documents too, or alone without `web`;
    with `papers` (AGENT_PAPERS: on, only), in scholarly papers too, or only there (--papers-only)."""
    span = f"{min(LEAST, breadth)} to {breadth}" if breadth > min(LEAST, breadth) else f"{breadth}"
    attached = f"\nThe files {', '.join(files)} come with the question; each sub-question's research can read " \
               "them." if files else ""
    return PROMPT.format(span=span, where=_where(docs, web, papers), files=attached, question=question.strip())


def _where(docs: bool, web: bool, papers: str) -> str:
    """Where each sub-question is researched: the user's documents, the web, scholarly papers."""
    online = "" if not web else "in scholarly papers only (search_papers, arxiv)" if papers == "only" else \
        "on the web" + (" and in scholarly papers (search_papers)" if papers == "on" else "")
    if not docs:
        return online or "on the web"
    return "in the user's own documents (searched with search_docs)" + (f" and {online}" if online else "")


def item_text(raw: str) -> str:
    """A sub-question as written in a list item: emphasis and control characters out, spaces collapsed."""
    return " ".join(_CONTROL.sub(" ", _EMPHASIS.sub("", raw.strip())).split())


def parse_plan(reply: str, breadth: int) -> list[str]:
    """The sub-questions of the reply's numbered (or bulleted) list, at most `breadth`, each once."""
    found: list[str] = []
    for line in reply.splitlines():
        m = _ITEM.match(line)
        if not m:
            continue
        text = item_text(m.group(1))
        if len(text) > 3 and text.lower() not in (f.lower() for f in found):
            found.append(text)
    return found[:breadth]
