"""Repairs for what real models write around the ReAct format: invented observations, placeholders, comments."""

from __future__ import annotations

import re
from functools import lru_cache

# `Observation:` (or `Observation 2:`) in the middle of a line: a stop-honouring server would have cut there.
_MIDLINE_OBSERVATION = re.compile(r"(?<=[\s\]\)}.,;'\"`*])Observation[ \t]*(?:\#?\d+)?[ \t]*:")
# What is left when a server stops part-way into `Observation`: `Obs`, `Observ`, `Observation` at the very end.
_PREFIXES = "|".join("Observation"[:k] for k in range(11, 2, -1))
_LONG_PREFIXES = "|".join("Observation"[:k] for k in range(11, 5, -1))
_TRAILING_PARTIAL = re.compile(
    rf"(?:\n[ \t]*(?:\*\*)?(?:{_PREFIXES})|[ \t](?:\*\*)?(?:{_LONG_PREFIXES}))"
    r"[ \t]*(?:\#?\d+)?[ \t]*:?[ \t]*(?:\*\*)?\s*\Z")
_PLACEHOLDERS = {
    "", "answer", "theanswer", "finalanswer", "thefinalanswer", "youranswer", "youranswerhere", "none",
    "null", "na", "nil", "directresponse", "directresponserequired", "noaction", "noneneeded", "result",
    "output", "response", "text", "placeholder", "tbd", "todo", "insertansweringhere", "insertanswer",
}
INPUT_ALIASES = re.compile(
    r"^[ \t]*(?:\*\*)?(?:input|tool[ \t_-]*input|action[ \t_-]*input|tool[ \t_-]*args|arguments|args|"
    r"parameters|params|tool[ \t_-]*arguments)[ \t]*(?:\*\*)?[ \t]*:[ \t]*(?:\*\*)?",
    re.IGNORECASE)
# Any other `word:` label starting the line after `Action:`: not an input we can read.
UNKNOWN_LABEL = re.compile(r"^[ \t]*(?:\*\*)?[A-Za-z][\w \t-]{0,24}(?:\*\*)?:(?!//)")


# Chat-template tokens: a base model, or a server formatting the chat with the wrong template, writes them back.
_TEMPLATE_TOKEN = re.compile(r"<</?SYS>>|\[/?INST\]|<\|[a-z_]{2,30}\|>|<(?:start|end)_of_turn>|"
                             r"<\uff5c[^\uff5c\n]{1,40}\uff5c>", re.IGNORECASE)
ECHO_CHARS = 100  # characters of the system prompt's sentences a reply repeats before it is an echo, not an answer
_ECHO_SENTENCE = 40  # shorter sentences ("Thought: <your reasoning>") are often copied by models that do answer


def echo_of(reply: str, system: str, task: str = "") -> str:
    """What shows a reply writes back the agent's own prompt instead of answering: the chat-template tokens it
    holds that the task does not (`<<SYS>>, [/INST]`), or "its instructions" when it repeats ECHO_CHARS of the
    system prompt's sentences; "" when it is neither."""
    tokens = list(dict.fromkeys(m.group(0) for m in _TEMPLATE_TOKEN.finditer(reply)))
    tokens = [t for t in tokens if t.lower() not in task.lower()]
    if tokens:
        return ", ".join(tokens[:4])
    if len(reply) >= _ECHO_SENTENCE and sum(len(s) for s in _sentences(system) if s in reply) >= ECHO_CHARS:
        return "its instructions"
    return ""


@lru_cache(maxsize=8)
def _sentences(prompt: str) -> tuple[str, ...]:
    parts = (p.strip() for p in re.split(r"(?<=[.!?])\s+|\n+", prompt))
    return tuple(p for p in parts if len(p) >= _ECHO_SENTENCE)


def cut_trailing_observation(text: str) -> str:
    """Cut an invented `Observation N:` in mid-line and a stop sequence's leftover (`Observ`) at the end."""
    mid = _MIDLINE_OBSERVATION.search(text)
    if mid is not None:
        text = text[: mid.start()]
    partial = _TRAILING_PARTIAL.search(text)
    if partial is not None:
        text = text[: partial.start()]
    return text.rstrip()


def is_placeholder(answer: str) -> bool:
    """True for a non-answer: empty, `answer`, `<answer>`, `None (direct response)`, `...`, `N/A`."""
    squeezed = re.sub(r"[^a-z0-9]", "", answer.lower())
    if squeezed in _PLACEHOLDERS:
        return True
    if re.fullmatch(r"\s*(?:<[^<>]*>|\{[^{}:]*\}|\[[^\[\]]*\]|\.{2,}|…)\s*", answer):
        return True
    return bool(re.match(r"(?i)\s*none\b\s*(?:[-:(,]|$)", answer))


def unescape_markdown(name: str) -> str:
    r"""`my\_tool` as Markdown renders it, back to `my_tool`."""
    return re.sub(r"\\([_*`\-.])", r"\1", name)


def strip_comments(source: str) -> str:
    """Remove `//`, `/* */` and `#` comments outside quoted strings (for dict literals models annotate)."""
    out: list[str] = []
    i, quote, n = 0, "", len(source)
    while i < n:
        ch = source[i]
        if quote:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(source[i + 1])
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "\"'":
            quote = ch
            out.append(ch)
        elif source.startswith("//", i) or ch == "#":
            while i < n and source[i] != "\n":
                i += 1
            continue
        elif source.startswith("/*", i):
            end = source.find("*/", i + 2)
            i = n if end < 0 else end + 2
            continue
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def unwrap_call(raw: str, tool: str) -> str:
    """`search({"q": 1})` -> `{"q": 1}` when the wrapper is the tool's own name (never other code)."""
    if not tool:
        return raw
    m = re.fullmatch(r"[`*]*([A-Za-z_][\w.-]*)[`*]*[ \t]*\((\s*\{.*\}\s*)\)[ \t]*;?", raw.strip(), re.DOTALL)
    if m and unescape_markdown(m.group(1)).lower() == tool.lower():
        return m.group(2).strip()
    return raw
