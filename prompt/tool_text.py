"""How a tool is described in the system prompt: in full, or compact for small context windows.

A tool's input schema is written as a short signature, `{"query": string, "num_results"?: integer = 5}`
(`?` marks an optional key), with one line per described parameter in the full form. The compact form keeps
the signature and the description's first sentence (or the tool's own `brief`). Text that comes from a tool
(an MCP server's parameter descriptions are untrusted) is written on one line, so it cannot start a line
that looks like a protocol label.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tools.base import Tool

BRIEF_CHARS = 120  # the most a compact description takes
_SENTENCE = re.compile(r"(?<=[a-z0-9)\]'\"`])\.(?=\s|$)")


def one_line(text: str) -> str:
    """The text with every run of whitespace (newlines included) as one space."""
    return " ".join(str(text).split())


def brief(tool: Tool) -> str:
    """The tool's one-sentence description: its `brief` if it has one, else its description's first sentence."""
    text = one_line(tool.brief or tool.description)
    end = _SENTENCE.search(text)
    first = text[: end.start() + 1] if end else text
    return first if len(first) <= BRIEF_CHARS else first[: BRIEF_CHARS - 1].rsplit(" ", 1)[0] + " …"


def _type(prop: Any) -> str:
    """A property schema as a short type: string, integer, "a"|"b", array of string, object."""
    if not isinstance(prop, dict):
        return "any"
    if isinstance(prop.get("enum"), list):
        return "|".join(json.dumps(v, ensure_ascii=False) for v in prop["enum"])
    options = prop.get("anyOf") or prop.get("oneOf")
    if isinstance(options, list) and options:
        return "|".join(dict.fromkeys(_type(o) for o in options))
    kind = prop.get("type")
    if isinstance(kind, list):
        return "|".join(str(k) for k in kind)
    if kind == "array":
        items = prop.get("items")
        return f"array of {_type(items)}" if isinstance(items, dict) and items else "array"
    return str(kind) if isinstance(kind, str) else "any"


def signature(schema: Any) -> str:
    """`{"query": string, "num_results"?: integer = 5}`; a schema that is not a plain object as JSON."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or schema.get("type", "object") != "object":
        return json.dumps(schema, ensure_ascii=False)
    required = set(schema.get("required") or ())
    keys = []
    for name, prop in props.items():
        mark = "" if name in required else "?"
        default = prop.get("default") if isinstance(prop, dict) else None
        value = "" if default is None else f" = {json.dumps(default, ensure_ascii=False)}"
        keys.append(f"{json.dumps(name, ensure_ascii=False)}{mark}: {_type(prop)}{value}")
    return "{" + ", ".join(keys) + "}"


def parameter_lines(schema: Any) -> list[str]:
    """`- name: description` for each described parameter of an object schema."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return []
    return [f"- {one_line(name)}: {one_line(p['description'])}" for name, p in props.items()
            if isinstance(p, dict) and isinstance(p.get("description"), str) and p["description"].strip()]


def describe(tool: Tool, compact: bool = False) -> str:
    """The tool's section of the system prompt."""
    if compact:
        return f"- {tool.name} {signature(tool.parameters)}: {brief(tool)}"
    lines = [f"### {tool.name}", tool.description.strip(), f"Input: {signature(tool.parameters)}",
             *parameter_lines(tool.parameters)]
    return "\n".join(lines)
