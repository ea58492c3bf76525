"""Tool base class, the @tool decorator and the ToolRegistry that validates arguments."""

from __future__ import annotations

import contextlib
import difflib
import inspect
import json
import re
import threading
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from sources.ledger import Read, failed_reads
from tools.dependencies import known_problem, tool_problem


@dataclass
class ToolOutput:
    """What a tool returns: the observation text, the sources it read, and its own model calls.

    `sources` is the short form: URLs or workspace paths read, whose text is the observation. `read` is the
    full form, one `Read(url, title, text, error)` per source: its title, the text it gave, or why it could
    not be read. Each source read gets a number for the task, shown as `[n] Title — URL` on top of the
    observation; the citation check compares the answer's `[n]` claims with that text. `failures` are
    failures the call recovered from (a search backend down before another answered): listed under the task.
    """

    text: str
    sources: list[str] = field(default_factory=list)
    usage: list[Any] = field(default_factory=list)  # Completions of models the tool called (look, transcribe)
    read: list[Read] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)  # what failed on the way to an answer (a search backend)

    def __post_init__(self) -> None:
        for r in self.read:  # `sources` always lists what was read, whichever form the tool used
            if r.error is None and r.url not in self.sources:
                self.sources.append(r.url)

    def reads(self) -> list[Read]:
        """Every source of this call as a Read: those of `read`, then the bare `sources` entries."""
        declared = {r.url for r in self.read}
        return [*self.read, *(Read(url) for url in self.sources if url not in declared)]


def redacted(output: ToolOutput, redact: Callable[[str], str]) -> ToolOutput:
    """The output with every text in it (the observation, what each source gave, its title and error, the
    failures) passed through `redact`: the agent's one boundary where configured keys leave what tools read."""
    reads = [replace(r, url=redact(r.url), title=redact(r.title), text=None if r.text is None else redact(r.text),
                     error=None if r.error is None else redact(r.error), aliases=tuple(map(redact, r.aliases)))
             for r in output.read]
    return ToolOutput(redact(output.text), [redact(s) for s in output.sources], output.usage, reads,
                      [redact(f) for f in output.failures])


def call_reads(found: Tool, args: dict[str, Any], output: ToolOutput, failed: bool) -> list[Read]:
    """The sources one call read: those run() declared; else, for a failed call, its http(s) URL arguments as
    sources it could not read; else what the tool's reads() says (the observation is their text)."""
    if output.reads():
        return output.reads()
    return failed_reads(args, output.text) if failed else found.reads(args, output)


def error_output(exc: Exception) -> ToolOutput:
    """The observation of a tool that raised: `Error: ...`, its billed model calls, and the source it could not
    read when the error names one (an exception with a `url` attribute, such as tools.web's refusals)."""
    url = getattr(exc, "url", None)
    return ToolOutput(f"Error: {exc}", usage=list(getattr(exc, "usage", [])),
                      read=[Read(url, error=str(exc))] if isinstance(url, str) and url else [])


class DuplicateToolError(ValueError):
    """Two tools were registered under the same name."""

    def __init__(self, name: str) -> None:
        super().__init__(f"a tool named {name!r} is already registered")
        self.name = name


class UnknownToolError(Exception):
    """The model named a tool that does not exist; the message lists the valid ones."""

    def __init__(self, name: str, valid: list[str], withheld: str | None = None) -> None:
        close = None if withheld else difflib.get_close_matches(name.lower(), valid, n=1, cutoff=0.4)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        why = f"The tool {name!r} is not offered in this run: {withheld}." if withheld else f"Unknown tool {name!r}."
        super().__init__(f"{why}{hint} Valid tools: {', '.join(valid)}.")
        self.name = name
        self.valid = valid
        self.suggestion = close[0] if close else None


class ToolArgumentsError(Exception):
    """The Action Input does not match the tool's JSON Schema."""

    def __init__(self, tool: str, error: str, schema: dict[str, Any]) -> None:
        super().__init__(
            f"Invalid Action Input for tool {tool!r}: {error}\n"
            f"Expected a JSON object matching this schema: {json.dumps(schema)}"
        )
        self.tool = tool
        self.error = error
        self.schema = schema


class Tool:
    """A capability the model may call: a name, a description for the model, a JSON Schema, run()."""

    name: str = ""
    description: str = ""
    brief: str = ""  # the compact prompt's one sentence (small windows); default: the description's first
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    # The argument naming what a successful call reads: that source, with the observation as its text, is
    # numbered for the task. A tool reading several sources returns ToolOutput(read=[...]) or overrides reads().
    source_argument: str | None = None

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Do the work and return the observation text (or a ToolOutput with sources)."""
        raise NotImplementedError

    def unavailable(self) -> str | None:
        """Why this tool cannot serve here (look without a vision model, browser without Playwright): a ToolRegistry
        then withholds it, neither described in the prompt nor called (a call is told this reason). None: offered."""
        return None

    def close(self) -> None:
        """The task is over (answered, failed, timed out or stopped): end what the tool keeps open for it (the
        browser's page, the python session). By default nothing."""

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """What a successful call read when run() did not say: by default the source `source_argument` names."""
        value = args.get(self.source_argument) if self.source_argument else None
        return [Read(value.strip())] if isinstance(value, str) and value.strip() else []

    def __repr__(self) -> str:
        return f"<Tool {self.name}>"


class FunctionTool(Tool):
    """A Tool built from a plain typed function by @tool."""

    def __init__(self, func: Callable[..., Any], name: str, description: str, parameters: dict[str, Any]):
        self.func = func
        self.name = name
        self.description = description
        self.parameters = parameters

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Call the wrapped function; non-string results are converted with str()."""
        result = self.func(**kwargs)
        return result if isinstance(result, ToolOutput | str) else str(result)


_JSON_TYPES: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean",
                               dict: "object", list: "array"}


def _schema_for(annotation: Any) -> dict[str, Any]:
    origin = typing.get_origin(annotation)
    args = [a for a in typing.get_args(annotation) if a is not type(None)]
    if origin in (typing.Union, types.UnionType) and len(args) == 1:
        return _schema_for(args[0])
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(annotation))}
    if origin in (list, tuple, set):
        return {"type": "array", "items": _schema_for(args[0])} if args else {"type": "array"}
    if origin is dict:
        return {"type": "object"}
    if annotation in _JSON_TYPES:
        return {"type": _JSON_TYPES[annotation]}
    return {}


def _docstring_parts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a docstring into its description and the per-argument lines of an Args: section."""
    parts = re.split(r"^\s*(?:Args|Arguments|Parameters):\s*$", doc, maxsplit=1, flags=re.M)
    summary = parts[0]
    args_block = parts[1] if len(parts) > 1 else ""
    described: dict[str, str] = {}
    for match in re.finditer(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$", args_block, flags=re.M):
        described[match.group(1)] = match.group(2).strip()
    return inspect.cleandoc(summary).strip(), described


def tool(func: Callable[..., Any] | None = None, *, name: str | None = None,
         description: str | None = None) -> Any:
    """Decorator: build a Tool from a typed function; its docstring becomes the description."""

    def build(f: Callable[..., Any]) -> FunctionTool:
        summary, arg_docs = _docstring_parts(inspect.getdoc(f) or "")
        hints = typing.get_type_hints(f)
        properties: dict[str, Any] = {}
        required: list[str] = []
        for pname, param in inspect.signature(f).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            prop = _schema_for(hints.get(pname, Any))
            if pname in arg_docs:
                prop["description"] = arg_docs[pname]
            if param.default is inspect.Parameter.empty:
                required.append(pname)
            else:
                prop["default"] = param.default
            properties[pname] = prop
        schema: dict[str, Any] = {"type": "object", "properties": properties, "required": required,
                                  "additionalProperties": False}
        return FunctionTool(f, name or f.__name__, description or summary or f.__name__, schema)

    return build(func) if func is not None else build


_VALIDATORS: dict[str, Any] = {}
_VALIDATORS_LOCK = threading.Lock()


def _validator(schema: dict[str, Any]) -> Any:
    """A checked validator for a tool schema, cached by the schema's text: tools are rebuilt for every task."""
    text = json.dumps(schema, sort_keys=True, default=str)
    with _VALIDATORS_LOCK:
        found = _VALIDATORS.get(text)
    if found is None:
        import jsonschema  # 60 ms to import: loaded with the first tool, not with the CLI

        jsonschema.Draft202012Validator.check_schema(schema)
        found = jsonschema.Draft202012Validator(schema)
        with _VALIDATORS_LOCK:
            _VALIDATORS[text] = found
    return found


def _first_call_problem(found: Tool) -> str | None:
    """Why a registered tool cannot be called after all: its schema is not valid JSON Schema, or a package it needs
    fails to import (tools/dependencies.py). Both are found at its first call, then remembered for the process."""
    import jsonschema  # a heavy dependency, imported by the first tool call: this names its error

    try:
        _validator(found.parameters)
    except jsonschema.SchemaError as exc:
        return f"its parameters are not a valid JSON Schema: {str(exc).splitlines()[0]}"
    return tool_problem(found.name)


class ToolRegistry:
    """The tools an agent may call, by name, with schema validation of their inputs; a tool that says it is
    unavailable (Tool.unavailable) is withheld: not listed, and a call of it is told why."""

    def __init__(self, tools: list[Tool] | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._withheld: dict[str, str] = {}  # lower-cased name -> why it is not offered
        for t in tools or []:
            self.register_tool(t)

    def register_tool(self, tool: Tool, check_schema: bool = False) -> Tool:
        """Add a tool; a second tool with the same name raises DuplicateToolError. Its JSON Schema is checked here
        with check_schema (jsonschema's SchemaError), else at its first call (jsonschema takes ~0.1 s to import:
        not before the first model request)."""
        if not tool.name or not re.fullmatch(r"[A-Za-z_][\w.-]*", tool.name):
            raise ValueError(f"invalid tool name {tool.name!r}")
        if tool.name.lower() in {n.lower() for n in self._tools}:
            raise DuplicateToolError(tool.name)
        if check_schema:
            _validator(tool.parameters)  # once per process for a given schema
        why = tool.unavailable() or known_problem(tool.name)  # a package an earlier call found broken
        if why:
            self._withheld[tool.name.lower()] = why
        else:
            self._tools[tool.name] = tool
        return tool

    def close(self) -> None:
        """Tell every tool its task is over (one that fails to close does not keep the others open)."""
        for t in self._tools.values():
            with contextlib.suppress(Exception):
                t.close()

    def names(self) -> list[str]:
        """Registered tool names, in registration order."""
        return list(self._tools)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.lookup(name) is not None

    def lookup(self, name: str) -> Tool | None:
        """The tool with this name (exact, else case-insensitive), or None."""
        if name in self._tools:
            return self._tools[name]
        lowered = {n.lower(): t for n, t in self._tools.items()}
        return lowered.get(name.lower())

    def resolve(self, name: str) -> Tool:
        """The tool with this name, or UnknownToolError naming the valid tools (and why, for a tool withheld: also
        one its first call finds cannot work, which is withheld from then on)."""
        found = self.lookup(name)
        broken = _first_call_problem(found) if found is not None else None
        if found is not None and broken:
            del self._tools[found.name]
            self._withheld[found.name.lower()] = broken
        if found is None or broken:
            raise UnknownToolError(name, self.names(), self._withheld.get(name.lower()))
        return found

    def prepare(self, name: str, arguments: dict[str, Any] | str) -> tuple[Tool, dict[str, Any]]:
        """Resolve the tool and turn the Action Input into validated keyword arguments."""
        found = self.resolve(name)
        args = coerce_arguments(found, arguments)
        validator = _validator(found.parameters)
        import jsonschema  # loaded by _validator already: this only names it

        error = jsonschema.exceptions.best_match(validator.iter_errors(args))
        if error is not None:
            where = "/".join(str(p) for p in error.absolute_path)
            raise ToolArgumentsError(found.name, f"{where + ': ' if where else ''}{error.message}",
                                     found.parameters)
        return found, args


def single_parameter(found: Tool) -> str | None:
    """The one parameter a bare string can fill: the only required one, else the only one."""
    required = found.parameters.get("required") or []
    if len(required) == 1:
        return str(required[0])
    props = list((found.parameters.get("properties") or {}).keys())
    return props[0] if len(props) == 1 else None


def coerce_arguments(found: Tool, arguments: dict[str, Any] | str) -> dict[str, Any]:
    """Map a plain-string Action Input onto a tool's single parameter."""
    if isinstance(arguments, dict):
        return arguments
    param = single_parameter(found)
    if param is None:
        raise ToolArgumentsError(found.name, "Action Input must be a JSON object, not a plain string",
                                 found.parameters)
    return {param: arguments}
