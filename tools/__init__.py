"""Tools the agent can call: the base classes, the built-in tools, and their sandbox, documents, web and media.

The stable import path for tool authors is this package: `from tools import Tool, ToolOutput, Read, ToolError,
tool`, and `tools.builtin.default_tools`. Owns the base (base.py), the packages each tool needs (dependencies.py),
the built-in tools and their helpers,
the subpackages sandbox/, mcp/, documents/, web/ and media/, and search_docs over the user's document folders
(docsearch.py, with `main.py docs` in docs_cli.py). May import core, config, sources, providers, llm.py, the
cache and docindex (handed documents/' readers); the prompt, the agent and the run import it.
"""

from core.errors import ToolError
from sources.ledger import Read
from tools.base import DuplicateToolError, Tool, ToolArgumentsError, ToolOutput, ToolRegistry, UnknownToolError, tool

__all__ = [
    "DuplicateToolError",
    "Read",
    "Tool",
    "ToolArgumentsError",
    "ToolError",
    "ToolOutput",
    "ToolRegistry",
    "UnknownToolError",
    "tool",
]
