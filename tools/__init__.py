"""Tools the agent can call: the base classes and the built-in tools."""

from core.errors import ToolError
from tools.base import DuplicateToolError, Tool, ToolArgumentsError, ToolOutput, ToolRegistry, UnknownToolError, tool

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
