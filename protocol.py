"""The text protocol: the system prompt, the client-side stop, and a tolerant parse_completion()."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from dataclasses import dataclass
from typing import Any

from tools.base import ToolRegistry

STOP_SEQUENCES = ["Observation:"]

# A label at the start of a line, tolerating bullets, headings, **bold**, any case and numbering.
_LABEL = re.compile(
    r"""^[ \t]*(?:[#>]+[ \t]*|[-+][ \t]+)?(?:\*\*|__|\*)?[ \t]*
    (?P<label>thought|action[ \t_-]*input|action|final[ \t_-]*answer|observation)
    [ \t]*(?:\#?\d+)?[ \t]*(?:\*\*|__|\*)?[ \t]*:[ \t]*(?:\*\*|__|\*(?!\*))?[ \t]*""",
    re.IGNORECASE | re.MULTILINE | re.VERBOSE,
)
_THINK = re.compile(r"<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^```[ \t]*(?P<lang>[\w+-]*)[ \t]*\n(?P<body>.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
_FINISH_NAMES = {"finalanswer", "final_answer", "finish", "answer", "none"}


@dataclass(frozen=True)
class Action:
    """The model wants a tool called: its name and its input (a dict, or a bare string)."""

    tool: str
    arguments: dict[str, Any] | str
    thought: str = ""


@dataclass(frozen=True)
class FinalAnswer:
    """The model's answer to the task."""

    answer: str
    thought: str = ""


class ParseError(Exception):
    """The completion could not be read; `message` is written for the model (an observation)."""

    def __init__(self, message: str, *, no_labels: bool = False) -> None:
        super().__init__(message)
        self.message = message
        self.no_labels = no_labels


FORMAT_REMINDER = """Reply in exactly this format:
Thought: <your reasoning>
Action: <one tool name>
Action Input: <a JSON object with the tool's arguments>

or, when you know the answer:
Thought: <your reasoning>
Final Answer: <the complete answer>"""


def render_system_prompt(tools: ToolRegistry, answer_style: str = "plain", extra: str = "") -> str:
    """The system prompt: the role, every tool with its input schema, and the exact format."""
    tool_lines = []
    for t in tools:
        tool_lines.append(f"### {t.name}\n{t.description.strip()}\nInput schema: "
                          f"{json.dumps(t.parameters, ensure_ascii=False)}")
    names = ", ".join(tools.names()) or "(no tools)"
    parts = [
        "You are a careful research assistant. You answer the user's task by thinking step by step "
        "and calling tools to gather evidence. Prefer facts you have checked with a tool over memory, "
        "and name the sources (URLs or files) your answer relies on.",
        "## Tools\n" + ("\n\n".join(tool_lines) if tool_lines else "(none)"),
        "## Format\nEach reply contains either one tool call or the final answer.\n\n"
        "To call a tool:\nThought: <what you know and what you will do next>\n"
        f"Action: <one of: {names}>\n"
        "Action Input: <a JSON object matching the tool's input schema>\n\n"
        "Then stop. The result comes back to you as `Observation: ...`; never write an Observation "
        "yourself.\n\n"
        "When you have enough information:\nThought: <why the evidence answers the task>\n"
        "Final Answer: <the complete answer, with its sources>",
    ]
    if answer_style == "concise":
        parts.append(CONCISE_INSTRUCTION)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


CONCISE_INSTRUCTION = (
    "## Answer style\nThe Final Answer must be as short as possible: a number, as few words as "
    "possible, or a comma-separated list of numbers and/or strings. Write numbers with digits, "
    "without thousands separators, and without units or % unless the task asks for them. "
    "Do not add explanations or sources after the Final Answer."
)


def cut_at_observation(text: str) -> str:
    """Drop everything from the first line that starts with `Observation:` (stop sequences are ignored
    by many servers, and what follows is the model inventing a tool result)."""
    for match in _LABEL.finditer(text):
        if match.group("label").lower() == "observation":
            return text[: match.start()].rstrip()
    return text


def _clean(text: str) -> str:
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    text = _THINK.sub("", text)
    if "</think>" in text.lower():  # some servers strip the opening tag only
        text = text[text.lower().rindex("</think>") + len("</think>"):]
    return cut_at_observation(text).strip()


def _labels(text: str) -> list[tuple[str, re.Match[str]]]:
    return [(re.sub(r"[\s_-]+", " ", m.group("label").lower()), m) for m in _LABEL.finditer(text)]


def parse_completion(text: str) -> Action | FinalAnswer:
    """Read a completion as an Action or a FinalAnswer; raise ParseError with advice for the model."""
    text = _clean(text)
    if not text:
        raise ParseError("Your reply was empty. " + FORMAT_REMINDER)
    labels = _labels(text)
    first_action = next((m for name, m in labels if name == "action"), None)
    first_final = next((m for name, m in labels if name == "final answer"), None)
    if first_action is not None and (first_final is None or first_action.start() < first_final.start()):
        return _parse_action(text, first_action, labels)
    if first_final is not None:
        thought = _thought(text[: first_final.start()])
        answer = text[first_final.end():].strip()
        if not answer:
            raise ParseError("Your Final Answer was empty. " + FORMAT_REMINDER)
        return FinalAnswer(answer, thought)
    if labels:
        raise ParseError("Your reply had no `Action:` and no `Final Answer:`. " + FORMAT_REMINDER)
    raise ParseError("Your reply did not follow the format. If it is your answer, repeat it after "
                     "`Final Answer:`. " + FORMAT_REMINDER, no_labels=True)


def _thought(before: str) -> str:
    return _LABEL.sub("", before, count=1).strip() if before.strip() else ""


def _parse_action(text: str, action: re.Match[str],
                  labels: list[tuple[str, re.Match[str]]]) -> Action | FinalAnswer:
    thought = _thought(text[: action.start()])
    line_end = text.find("\n", action.end())
    line_end = len(text) if line_end < 0 else line_end
    name_line = text[action.end():line_end]
    name, inline = _split_tool_name(name_line)
    if re.sub(r"[\s`*'\"_-]", "", name_line).lower() in _FINISH_NAMES:
        name, inline = "final_answer", ""
    inp = next((m for n, m in labels if n == "action input" and m.start() >= action.end()), None)
    if inp is not None:
        raw = text[inp.end():]
    elif inline:
        raw = inline
    else:
        raw = text[line_end:]
    if not name:
        raise ParseError("`Action:` must be followed by a tool name. " + FORMAT_REMINDER)
    arguments = parse_action_input(raw)
    if re.sub(r"[\s`*'\"]", "", name).lower() in _FINISH_NAMES:
        if not arguments:
            raise ParseError("To finish, write `Final Answer: <answer>`. " + FORMAT_REMINDER)
        return FinalAnswer(_answer_from_input(arguments), thought)
    return Action(name, arguments, thought)


def _answer_from_input(arguments: dict[str, Any] | str) -> str:
    if isinstance(arguments, dict):
        for key in ("answer", "final_answer", "output", "text"):
            if key in arguments:
                return str(arguments[key])
        return json.dumps(arguments, ensure_ascii=False)
    return arguments


def _split_tool_name(line: str) -> tuple[str, str]:
    """The tool name on the Action line, and any input written inline after it."""
    line = line.strip()
    m = re.match(r"^[`*'\"]*([A-Za-z_][\w.-]*)[`*'\"]*[ \t]*(.*)$", line)
    if not m:
        return "", ""
    name, rest = m.group(1), m.group(2).strip()
    bracket = re.fullmatch(r"[\[(](.*)[\])]", rest, flags=re.DOTALL)
    if bracket:
        rest = bracket.group(1).strip()
    return name, rest


def parse_action_input(raw: str) -> dict[str, Any] | str:
    """The Action Input as a dict (JSON, Python literal, fenced) or, failing that, a bare string."""
    raw = raw.strip()
    fence = _FENCE.match(raw)
    if fence:
        body = fence.group("body").strip()
        if fence.group("lang").lower() in {"", "json", "json5", "javascript", "js"} and body.startswith("{"):
            found = _decode_object(body)
            if found is not None:
                return found
        return body
    if raw.startswith("{"):
        found = _decode_object(raw)
        if found is not None:
            return found
        raise ParseError("Your Action Input starts with `{` but is not a valid JSON object. Check quotes, "
                         "commas and braces; strings need double quotes. " + FORMAT_REMINDER)
    return _bare_string(raw)


def _bare_string(raw: str) -> str:
    nxt = next((m for m in _LABEL.finditer(raw)), None)
    value = (raw[: nxt.start()] if nxt else raw).strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        try:
            decoded = ast.literal_eval(value)
            if isinstance(decoded, str):
                return decoded
        except (ValueError, SyntaxError):
            pass
    return value


def _decode_object(raw: str) -> dict[str, Any] | None:
    """Decode the object at the start of raw with quote-aware decoders; text after it is ignored."""
    try:
        value, _ = json.JSONDecoder(strict=False).raw_decode(raw)
        return value if isinstance(value, dict) else None
    except json.JSONDecodeError:
        pass
    end = _literal_end(raw)
    if end is None:
        return None
    try:
        value = ast.literal_eval(_json_names_to_python(raw[:end]))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


def _literal_end(raw: str) -> int | None:
    """Where the balanced {...} at the start of raw ends, found with Python's (quote-aware) tokenizer."""
    depth = 0
    lines = raw.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))
    try:
        for tok in tokenize.generate_tokens(io.StringIO(raw).readline):
            if tok.type == tokenize.OP and tok.string in "{[(":
                depth += 1
            elif tok.type == tokenize.OP and tok.string in "}])":
                depth -= 1
                if depth == 0:
                    row, col = tok.end
                    return offsets[row - 1] + col
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None
    return None


def _json_names_to_python(source: str) -> str:
    """Map JSON's true/false/null to Python names, outside strings only."""
    mapping = {"true": "True", "false": "False", "null": "None"}
    out = []
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.NAME and tok.string in mapping:
            tok = tok._replace(string=mapping[tok.string])
        out.append(tok)
    return tokenize.untokenize(out)


def observation_message(text: str) -> str:
    """How a tool result is shown to the model."""
    return f"Observation: {text}"
