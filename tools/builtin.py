"""The six built-in tools, built for one task's workspace."""

from __future__ import annotations

from pathlib import Path

from config import Settings, inherited_environment
from tools.base import Tool


def default_tools(settings: Settings, workspace: Path) -> list[Tool]:
    """search, scrape, python, read_file, write_file and list_files, sharing one workspace."""
    from tools.files import ListFilesTool, ReadFileTool, WriteFileTool
    from tools.python_exec import PythonTool
    from tools.scrape import ScrapeTool
    from tools.search import SearchTool

    return [
        SearchTool(settings),
        ScrapeTool(workspace, settings),
        PythonTool(workspace, settings, inherited_env=inherited_environment()),
        ReadFileTool(workspace),
        WriteFileTool(workspace),
        ListFilesTool(workspace),
    ]
