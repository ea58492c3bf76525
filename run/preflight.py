"""Checks run before the first model call, so a run that cannot work fails with one line and exit 2.

The workspace and trace directories must be creatable and writable, the report's folder writable, every
--tools module's tools() must return Tool objects that register next to the built-in ones, and every tool's
packages must be installed (found without importing them: a package installed but broken is found at the tool's
first call, which is then told why, as tools/dependencies.py says).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from core.errors import ConfigError
from tools.base import Tool, ToolRegistry
from tools.builtin import default_tools, load_tool_factories
from tools.dependencies import missing_tool_dependencies


def check_run(settings: Any, output: Path | None) -> None:
    """Raise ConfigError for the first path, tool module or tool dependency that would fail the run."""
    check_directory(settings.runs_dir, "--runs-dir / AGENT_RUNS_DIR", "runs_dir")
    if settings.workspace is not None:
        check_directory(settings.workspace, "--workspace / AGENT_WORKSPACE", "workspace")
    if settings.trace_dir is not None and settings.traces:
        check_directory(settings.trace_dir, "--trace-dir / AGENT_TRACE_DIR", "trace_dir")
    if output is not None:
        check_output_folder(output)
    names = check_tools(settings)
    check_tool_dependencies(names)


def check_directory(path: Path, setting: str, field: str) -> None:
    """The directory exists and takes a file, or could be created: checked without creating anything."""
    try:
        if path.exists():
            if not path.is_dir():
                raise NotADirectoryError(20, "not a directory")
            with tempfile.NamedTemporaryFile(dir=path, prefix=".write-check-"):
                pass
            return
        existing = next(p for p in path.absolute().parents if p.exists())
        if not existing.is_dir():
            raise NotADirectoryError(20, f"{existing} is not a directory")
        if not os.access(existing, os.W_OK | os.X_OK):
            raise PermissionError(13, f"cannot create folders in {existing}")
    except OSError as exc:
        raise ConfigError(f"{setting} {path}: cannot create or write it ({exc.strerror or exc})", field) from exc


def check_output_folder(output: Path) -> None:
    """The report's folder exists (or can be created under a folder that exists) and is writable."""
    folder = output.resolve().parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not existing.is_dir():
        raise ConfigError(f"-o {output}: {existing} is not a directory", "output")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ConfigError(f"-o {output}: cannot write in {existing} (permission denied)", "output")


def check_tools(settings: Any) -> list[str]:
    """Build the built-in and --tools tools once in a scratch folder; their names, or ConfigError."""
    factories = list(zip(settings.tool_modules, load_tool_factories(settings.tool_modules), strict=True))
    with tempfile.TemporaryDirectory(prefix="agent-preflight-") as scratch:
        registry = ToolRegistry(default_tools(settings, Path(scratch)))
        for spec, factory in factories:
            for item in _made_by(spec, factory, settings, Path(scratch)):
                if not isinstance(item, Tool):
                    raise ConfigError(f"tool module {spec!r}: tools() returned {type(item).__name__} "
                                      f"{_short(item)}, not a Tool (subclass tools.Tool or use @tool)",
                                      "tool_modules")
                try:
                    registry.register_tool(item, check_schema=True)
                except Exception as exc:  # duplicate name, bad name, invalid JSON Schema
                    raise ConfigError(f"tool module {spec!r}: tool {item.name!r} cannot be used: "
                                      f"{str(exc).splitlines()[0]}", "tool_modules") from exc
        return registry.names()


def _made_by(spec: str, factory: Any, settings: Any, scratch: Path) -> list[Any]:
    try:
        made = factory(settings, scratch)
    except Exception as exc:  # the user's code: any error is reported as one line
        raise ConfigError(f"tool module {spec!r}: tools(settings, workspace) failed: "
                          f"{type(exc).__name__}: {exc}", "tool_modules") from exc
    if not isinstance(made, list | tuple):
        raise ConfigError(f"tool module {spec!r}: tools() returned {type(made).__name__}, not a list of Tool "
                          "objects", "tool_modules")
    return list(made)


def check_tool_dependencies(tool_names: list[str]) -> None:
    """ConfigError naming the tool, the package and the fix when a tool's package is not installed."""
    failed = missing_tool_dependencies(tool_names)
    if failed:
        tool, probe = failed[0]
        raise ConfigError(f"the {tool} tool cannot work: {probe.message()}", "tools")


def _short(item: object) -> str:
    text = repr(item)
    return text if len(text) <= 60 else text[:57] + "..."
