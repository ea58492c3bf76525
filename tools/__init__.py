"""Tools the agent can call: the base classes and the built-in tools."""

from tools.base import (
    DuplicateToolError,
    Tool,
    ToolArgumentsError,
    ToolError,
    ToolOutput,
    ToolRegistry,
    UnknownToolError,
    tool,
)

__all__ = [
    "DuplicateToolError",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "UnknownToolError",
    "tool",
]
