"""The text protocol: the system prompt, the client-side stop, and a tolerant parse_completion()."""

from __future__ import annotations

import ast
import io
import json
import re
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from prompt.repair import (
    INPUT_ALIASES,
    UNKNOWN_LABEL,
    cut_trailing_observation,
    echo_of,
    is_placeholder,
    strip_comments,
    unescape_markdown,
    unwrap_call,
)
from prompt.tool_text import describe
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
_FINISH_NAMES = {"finalanswer", "final_answer", "finish", "answer"}
_NO_TOOL = re.compile(r"[\W_]*(?:none|n/?a|null|nothing|no[ \t_-]*(?:tool|action)s?)\b", re.IGNORECASE)
# `Action: <one of: search, scrape>` copied from the prompt's format (a bare `<search>` is a name in brackets).
_PLACEHOLDER = re.compile(r"[ \t]*[`*'\"]*<[^<>\n]*[\s:,][^<>\n]*>")
_GLUED_INPUT = re.compile(r"action[ \t_-]*input[ \t]*:", re.IGNORECASE)


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

    def __init__(self, message: str, *, no_labels: bool = False, echo: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.no_labels = no_labels
        self.echo = echo  # the reply wrote back the prompt: what showed it (`<<SYS>>`), never an answer


FORMAT_REMINDER = """Reply in exactly this format:
Thought: <your reasoning>
Action: <one tool name>
Action Input: <a JSON object with the tool's arguments>

or, when you know the answer:
Thought: <your reasoning>
Final Answer: <the complete answer>"""


def render_system_prompt(tools: ToolRegistry, answer_style: str = "plain", extra: str = "",
                         compact: bool = False) -> str:
    """The system prompt: the role, every tool with its input, and the exact format; `compact` is the short
    form for small context windows (each tool on one line, the frame cut to its rules)."""
    parts = _compact_parts(tools) if compact else _full_parts(tools)
    if answer_style == "concise":
        parts.append(CONCISE_INSTRUCTION)
    if extra:
        parts.append(extra)
    return "\n\n".join(parts)


def _full_parts(tools: ToolRegistry) -> list[str]:
    tool_lines = [describe(t) for t in tools]
    names = ", ".join(tools.names()) or "(no tools)"
    return [
        "You are a careful research assistant. You answer the user's task by thinking step by step "
        "and calling tools to gather evidence. Prefer facts you have checked with a tool over memory. "
        + CITE_INSTRUCTION + (
            " Python code has no network: fetch files with scrape(url, save_as=...) first." if "python" in tools
            else ""),
        "## Tools\n" + ("\n\n".join(tool_lines) if tool_lines else "(none)"),
        "## Format\nEach reply contains either one tool call or the final answer.\n\n"
        "To call a tool:\nThought: <what you know and what you will do next>\n"
        f"Action: <one of: {names}>\n"
        "Action Input: <a JSON object with the tool's input (a key marked ? may be left out)>\n\n"
        "Then stop. The result comes back to you as `Observation: ...`; never write an Observation "
        "yourself.\n\n"
        "When you have enough information:\nThought: <why the evidence answers the task>\n"
        "Final Answer: <the complete answer, with [n] after each claim taken from source n>",
    ]


def _compact_parts(tools: ToolRegistry) -> list[str]:
    tool_lines = "\n".join(describe(t, compact=True) for t in tools) or "(none)"
    return [
        "You are a research assistant: call tools to find evidence, then answer. A source's observation starts "
        "with `[n] Title — URL`; put [n] after each claim taken from it.",
        "Tools (input keys marked ? are optional):\n" + tool_lines,
        "To call a tool, write these three lines and stop:\nThought: <your reasoning>\nAction: <a tool name>\n"
        "Action Input: <a JSON object>\nWhen you know the answer:\nThought: <your reasoning>\n"
        "Final Answer: <the answer, with [n] citations>",
    ]


COMPACT_SHARE = 0.5  # of the prompt budget: a full system prompt larger than this gives way to the compact one


def fitted_system_prompt(tools: ToolRegistry, answer_style: str, budget_tokens: int,
                         tokens: Callable[[str], int]) -> str:
    """The full system prompt, or the compact one when the full one would take over COMPACT_SHARE of the
    budget (a small window or --context-budget): `tokens` estimates a text's size."""
    full = render_system_prompt(tools, answer_style)
    if tokens(full) <= budget_tokens * COMPACT_SHARE:
        return full
    return render_system_prompt(tools, answer_style, compact=True)


# The citation check (sources/check.py) reads these markers; the observation header is sources/ledger.py's.
CITE_INSTRUCTION = (
    "Every page, document or file you read is numbered: its observation starts with `[n] Title — URL`. "
    "Put [n] after each claim you take from source n, and cite only sources you have read (a search "
    "result is not read until you scrape it).")

CONCISE_INSTRUCTION = (
    "## Answer style\nThe Final Answer must be as short as possible: a number, as few words as "
    "possible, or a comma-separated list of numbers and/or strings. Write numbers with digits, "
    "without thousands separators, and without units or % unless the task asks for them. "
    "Do not add explanations, sources or [n] markers after the Final Answer."
)


def check_echo(reply: str, system: str, task: str) -> None:
    """Raise ParseError (with `echo`) when the reply writes back the agent's own prompt or chat-template tokens."""
    echo = echo_of(reply, system, task)
    if echo:
        raise ParseError(f"Your reply wrote back your instructions or chat markup ({echo}) instead of answering "
                         "the task. " + FORMAT_REMINDER, echo=echo)


def echo_failure(echo: str) -> str:
    """The task's error once the model wrote its prompt back again after being asked for the format."""
    return (f"the model wrote back its own prompt ({echo}) instead of answering, again after being asked for the "
            "format: it is likely a base model, or its server applies the wrong chat template. Use an instruct "
            "(chat) model, or start the server with the model's chat template (llama.cpp's llama-server --jinja; "
            "llama-cpp-python's --chat_format NAME)")


def cut_at_observation(text: str) -> str:
    """Drop everything from the first `Observation:` (stop sequences are ignored by many servers, and what
    follows is the model inventing a tool result), and a stop sequence's leftover such as `Observ`.
    A reply that opens by echoing the last observation is read from its first other label."""
    labels = [m for m in _LABEL.finditer(text)]
    start = 0
    if labels and labels[0].group("label").lower() == "observation" and not text[: labels[0].start()].strip():
        after = next((m for m in labels if m.group("label").lower() != "observation"), None)
        if after is None:
            return text
        start = after.start()
    for match in labels:
        if match.start() > start and match.group("label").lower() == "observation":
            return cut_trailing_observation(text[start: match.start()])
    return cut_trailing_observation(text[start:])


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
    name_start, line_end = _name_line(text, action.end())
    name_line = text[name_start:line_end]
    glued = _GLUED_INPUT.search(name_line)  # `Action:searchAction Input:{...}`
    if glued is not None:
        name_line = name_line[: glued.start()]
    if _NO_TOOL.match(name_line):
        raise ParseError("`Action:` must name one of the tools; there is no `None` tool. If you can answer "
                         "now, write `Final Answer: <the answer>`. " + FORMAT_REMINDER)
    if _PLACEHOLDER.match(name_line):
        raise ParseError(f"Your `Action:` line copied the format's placeholder ({name_line.strip()[:60]}): write "
                         "just the name of one listed tool instead. " + FORMAT_REMINDER)
    name, inline = _split_tool_name(unescape_markdown(name_line))
    if re.sub(r"[\s`*'\"_-]", "", name_line).lower() in _FINISH_NAMES:
        name, inline = "final_answer", ""
    if not name:
        raise ParseError("`Action:` must be followed by a tool name. " + FORMAT_REMINDER)
    inp = next((m for n, m in labels if n == "action input" and m.start() >= action.end()), None)
    if glued is not None:
        arguments = parse_action_input(text[name_start + glued.end():], name)
    elif inp is not None:
        arguments = parse_action_input(text[inp.end():], name)
    elif inline:
        arguments = parse_action_input(inline, name)
    else:
        arguments = _unlabelled_input(text[line_end:], name)
    if re.sub(r"[\s`*'\"]", "", name).lower() in _FINISH_NAMES:
        return _finish_action(arguments, thought)
    return Action(name, arguments, thought)


def _name_line(text: str, pos: int) -> tuple[int, int]:
    """Where the tool name is: the rest of the `Action:` line, else the next line if it is no label."""
    line_end = text.find("\n", pos)
    line_end = len(text) if line_end < 0 else line_end
    if text[pos:line_end].strip() or line_end == len(text):
        return pos, line_end
    nxt = re.compile(r"\n[ \t]*(?:\n[ \t]*)*").match(text, line_end)
    start = nxt.end() if nxt else line_end + 1
    if _LABEL.match(text, start) or UNKNOWN_LABEL.match(text[start:]):
        return pos, line_end
    end = text.find("\n", start)
    return start, len(text) if end < 0 else end


def _unlabelled_input(rest: str, tool: str) -> dict[str, Any] | str:
    """The input written after the Action line without an `Action Input:` label."""
    stripped = rest.strip()
    alias = INPUT_ALIASES.match(stripped)
    if alias is not None:
        return parse_action_input(stripped[alias.end():], tool)
    if not stripped or stripped.startswith(("{", "```")):
        return parse_action_input(stripped, tool)
    what = "an unknown label" if UNKNOWN_LABEL.match(stripped) else "text"
    raise ParseError(f"After `Action: {tool}` came {what} instead of `Action Input:`. " + FORMAT_REMINDER)


def _finish_action(arguments: dict[str, Any] | str, thought: str) -> FinalAnswer:
    """`Action: Finish` with the answer as its input; a placeholder is no answer."""
    answer = _answer_from_input(arguments) if arguments else ""
    if is_placeholder(answer):
        raise ParseError("To finish, write `Final Answer: <the actual answer>`. " + FORMAT_REMINDER)
    return FinalAnswer(answer, thought)


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
    m = re.match(r"^[`*'\"<]*([A-Za-z_][\w.-]*)[`*'\">]*[ \t]*(.*)$", line)
    if not m:
        return "", ""
    name, rest = m.group(1), m.group(2).strip().rstrip("`*").strip()
    bracket = re.fullmatch(r"[\[(](.*)[\])]", rest, flags=re.DOTALL)
    if bracket:
        rest = bracket.group(1).strip()
    return name, rest


def parse_action_input(raw: str, tool: str = "") -> dict[str, Any] | str:
    """The Action Input as a dict (JSON, Python literal, fenced) or, failing that, a bare string.
    A missing or `None` input is `{}`: tools without parameters run, others reject it by their schema."""
    raw = unwrap_call(raw.strip(), tool)
    if re.fullmatch(r"(?i)[`'\"]*(?:none|null)?[`'\"]*", raw):
        return {}
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
    if re.fullmatch(r"`[^`]+`", value):  # inline code: `df.head()`
        value = value[1:-1].strip()
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
    found = _decode_plain(raw)
    if found is None and ("//" in raw or "/*" in raw or "#" in raw):
        found = _decode_plain(strip_comments(raw))
    return found


def _decode_plain(raw: str) -> dict[str, Any] | None:
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
