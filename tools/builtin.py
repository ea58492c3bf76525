"""The built-in tools, built for one task's workspace."""

from __future__ import annotations

import functools
import importlib
import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

from config import Settings, inherited_environment
from core.errors import ConfigError
from core.search_settings import papers_mode
from tools.base import Tool
from tools.docsearch import SearchDocsTool
from tools.documents.confined import DocLimits
from tools.edit_file import EditFileTool
from tools.files import ListFilesTool, ReadFileTool, WriteFileTool
from tools.mcp import active_tools
from tools.media.look import LookTool
from tools.media.transcribe import TranscribeTool
from tools.media.watch import WatchTool
from tools.notes import NotesTool
from tools.python_exec import PythonTool
from tools.shell import ShellTool
from tools.web.browser.tool import BrowserTool
from tools.web.papers.arxiv import ArxivTool
from tools.web.papers.tool import SearchPapersTool
from tools.web.scrape import ScrapeTool
from tools.web.search import SearchTool
from tools.web.wikipedia import WikipediaTool

ToolFactory = Callable[[Settings, Path], list[Tool]]


def default_tools(settings: Settings, workspace: Path) -> list[Tool]:
    """search, wikipedia, arxiv and search_papers (unless AGENT_SEARCH=0; search_papers unless AGENT_PAPERS=off),
    search_docs (with --docs), scrape, browser, python, shell, read_file, write_file, edit_file, list_files, look,
    transcribe, watch and notes, sharing one workspace (a ToolRegistry withholds those that cannot serve here: look
    and watch without a vision model, transcribe without a speech model, browser without Playwright or with
    SCRAPE_RENDER=off). AGENT_PAPERS=only (research --papers-only) keeps the scholarly ones: no web search,
    wikipedia, scrape or browser."""
    web = papers_mode(settings) != "only"
    return [
        *([SearchTool(settings)] if settings.search and web else []),
        *([SearchDocsTool(settings)] if settings.docs_dirs else []),  # --docs: the user's own documents
        *([ScrapeTool(workspace, settings)] if web else []),
        *([WikipediaTool(settings)] if settings.search and web else []),  # it searches too
        *([ArxivTool(settings)] if settings.search else []),  # papers, as search_papers' are
        *([SearchPapersTool(settings)] if papers_mode(settings) != "off" else []),
        *([BrowserTool(workspace, settings)] if web else []),
        PythonTool(workspace, settings, inherited_env=inherited_environment()),
        ShellTool(workspace, settings, inherited_env=inherited_environment()),
        ReadFileTool(workspace, DocLimits.of(settings)),
        WriteFileTool(workspace),
        EditFileTool(workspace),
        ListFilesTool(workspace),
        LookTool(workspace, settings),
        TranscribeTool(workspace, settings),
        WatchTool(workspace, settings),
        NotesTool(),
        *active_tools(workspace, settings),  # the run's MCP servers' tools, if any
    ]


def load_tool_factories(specs: tuple[str, ...]) -> list[ToolFactory]:
    """Import each --tools module (a .py path or a dotted name) and return its `tools(settings, workspace)`."""
    return _load_factories(tuple(str(Path(s).resolve()) if s.endswith(".py") else s for s in specs))


@functools.cache  # imported once per run, not once per task
def _load_factories(specs: tuple[str, ...]) -> list[ToolFactory]:
    factories = []
    for spec in specs:
        module = _import(spec)
        factory = getattr(module, "tools", None)
        if not callable(factory):
            raise ConfigError(f"tool module {spec!r} has no function tools(settings, workspace) -> list[Tool]",
                              "tool_modules")
        factories.append(factory)
    return factories


def _import(spec: str) -> ModuleType:
    try:
        if spec.endswith(".py"):
            path = Path(spec).resolve()
            loader = importlib.util.spec_from_file_location(f"agent_tools_{path.stem}", path)
            if loader is None or loader.loader is None or not path.is_file():
                raise ConfigError(f"tool module {spec!r}: no such file", "tool_modules")
            module = importlib.util.module_from_spec(loader)
            loader.loader.exec_module(module)
            return module
        return importlib.import_module(spec)
    except ConfigError:
        raise
    except Exception as exc:  # any error in the user's module is a configuration error, reported once
        raise ConfigError(f"tool module {spec!r} failed to import: {type(exc).__name__}: {exc}",
                          "tool_modules") from exc
