"""The scrape tool: fetch a URL safely and turn it into text the model can read (HTML, PDF, JSON, ...)."""

from __future__ import annotations

import json
import mimetypes
import os
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from config import Settings
from core.text import truncate_middle
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.documents.confined import DocLimits, page_reading
from tools.documents.errors import ConversionError
from tools.documents.reading import pdf_shown, scrape_binary
from tools.safe_open import (
    WorkspacePathError,
    create_new_file,
    replace_file,
    workspace_dir,
    workspace_parts,
)
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.errors import DomainRefusedError, HTTPStatusError, RobotsRefusedError
from tools.web.fetch import AddressCheck, FetchError, FetchResult, Resolver
from tools.web.html_page import RenderRefusedError, html_text, refusal_of
from tools.web.session import WebSession, session_for

MAX_OBSERVATION_CHARS = 40_000

class ScrapeInputError(ValueError):
    """A scrape argument is unusable (a bad page range, or a save path outside the workspace)."""


def download_name(result: FetchResult) -> str:
    """A safe file name for a download: Content-Disposition's, else the URL's, plus an extension."""
    disposition = result.headers.get("content-disposition", "")
    match = re.search(r"filename\*?=(?:UTF-8'')?\"?([^\";]+)", disposition, re.I)
    raw = unquote(match.group(1)) if match else unquote(Path(urlsplit(result.url).path).name)
    return safe_file_name(raw, result.content_type)


def safe_file_name(raw: str, content_type: str = "") -> str:
    """A file name a page proposed, made safe for the workspace: word characters, dots and dashes, an extension."""
    name = re.sub(r"[^\w.-]+", "_", Path(raw).name).strip("._") or "download"
    if not Path(name).suffix:
        name += mimetypes.guess_extension(content_type) or ".bin"
    return name[:120]


def _pretty_json(text: str, lines: list[str]) -> str:
    try:
        return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
    except ValueError:
        lines.append("(the body is not valid JSON; shown as text)")
        return text


class ScrapeTool(Tool):
    """Fetch one web page or file and return its readable content."""

    name = "scrape"
    brief = "Read a web page, PDF or document at a URL as text."
    description = (
        "Read a URL as text: a page's main text as Markdown under its title (script-built pages are rendered "
        "in a headless browser), a PDF with '--- page N ---' markers, Office, EPUB, CSV and JSON files as text; "
        "other files are saved to the workspace. A challenge, login or paywall page comes back as "
        "'blocked: <kind>'; robots.txt and the domain rules are obeyed."
    )
    parameters = {
        "type": "object",
        "properties": {
            "url": {"type": "string", "description": "The http(s) URL."},
            "pages": {"type": "string",
                      "description": "PDF only: pages to read, e.g. '1-3,7' or '10-' (default all)."},
            "save_as": {"type": "string",
                        "description": "Also save the raw file at this workspace path, e.g. 'data/report.pdf'."},
            "render": {"type": "boolean",
                       "description": "true: read the text the page's JavaScript builds (automatic when a page looks "
                                      "script-built)."},
        },
        "required": ["url"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, settings: Settings, *, resolver: Resolver | None = None,
                 address_check: AddressCheck | None = None,
                 sleep: Callable[[float], None] | None = None, web: WebSession | None = None) -> None:
        self.workspace = Path(workspace)
        self.settings = settings
        self.guard = SecretGuard(settings)
        self.web = web or session_for(settings, resolver, address_check)  # the run's rules, turns and browser
        self.fetcher = self.web.fetcher(sleep=sleep or time.sleep)

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """Fetch `url` and convert it by content type; failures come back as an 'Error: ...' string, and a page
        that must not be read (robots.txt, domain rules, a challenge page) raises SourceNotReadError."""
        url = str(kwargs["url"]).strip()
        pages, save_as = kwargs.get("pages") or None, kwargs.get("save_as") or None
        render = bool(kwargs.get("render"))
        try:
            self.guard.check(url, "URL")
        except SecretInRequestError as exc:
            return f"Error: {exc}"  # the URL itself is not echoed: it holds the secret
        try:
            target = self._workspace_path(save_as) if save_as else None
            result = self.fetcher.get(url)
            lines = [f"URL: {result.url}", *result.notes]
            if result.redirects:
                lines.append(f"(redirected from {url})")
            body = self._convert(result, pages, lines, target, render)
        except (RobotsRefusedError, DomainRefusedError, HTTPStatusError) as exc:
            refused = refusal_of(exc, url)  # robots.txt, the domain rules, a challenge page behind an error status
            if refused is None:
                return f"Error: could not scrape {url}: {exc}"
            raise refused from exc
        except (FetchError, ScrapeInputError, RenderRefusedError) as exc:
            return f"Error: could not scrape {url}: {exc}"
        text = "\n".join(lines) + ("\n\n" + body if body else "")
        title = next((line[7:] for line in lines if line.startswith("Title: ") and line != "Title: (none)"), "")
        aliases = (url, target) if target else (url,)  # the file saved from it is the same source
        return ToolOutput(text, read=[Read(result.url, title, body, aliases=aliases)])  # numbered: `[n] Title — URL`

    def _convert(self, result: FetchResult, pages: str | None, lines: list[str], target: str | None,
                 render: bool = False) -> str:
        """The observation body for this content type; header lines are appended to `lines`."""
        kind = result.kind()
        size = f"{len(result.body):,} bytes"
        if result.truncated:
            if kind in ("pdf", "binary"):
                raise ScrapeInputError(f"the file is larger than the {self.settings.scrape_max_bytes:,}-byte "
                                       "limit (SCRAPE_MAX_BYTES); stopped reading and kept nothing")
            size = (f"only the first {len(result.body):,} bytes read: the body exceeds the "
                    f"{self.settings.scrape_max_bytes:,}-byte limit (SCRAPE_MAX_BYTES)")
        lines.append(f"Content-Type: {result.content_type or 'unknown'} ({size})")
        if target is not None:
            lines.append(f"Saved the raw file to {self._save(target, result)} in the workspace.")
        if kind == "binary":
            if target is None:
                saved = self._save(None, result)
                lines.append(f"Binary content saved to {saved} in the workspace.")
            return scrape_binary(download_name(result), result.body, lines, result.url,  # Office, EPUB, ZIP...
                                 DocLimits.of(self.settings))
        if kind == "html":
            html = result.text()
            try:  # parsed once, in the converter's child under its limits: the title and the main text
                title, text = page_reading(html, result.url, DocLimits.of(self.settings))
                lines.insert(0, f"Title: {title or '(none)'}")
                text = html_text(result, html, lines, self.web, render, text)  # blocked named, script-built rendered
            except ConversionError as exc:  # a limit met (named)
                raise ScrapeInputError(str(exc)) from exc
        elif kind == "pdf":
            text = self._pdf(result.body, pages, lines, DocLimits.of(self.settings))
        else:
            text = result.text()
            if kind == "json":
                text = _pretty_json(text, lines)
        note = "ask for fewer PDF pages, or pass save_as to keep the whole file"
        return truncate_middle(text, MAX_OBSERVATION_CHARS, note)

    @staticmethod
    def _pdf(body: bytes, pages: str | None, lines: list[str], limits: DocLimits) -> str:
        try:
            text, said = pdf_shown(body, pages, limits)  # in a child under the limits (tools/documents/confined)
        except ConversionError as exc:  # a bad page range, a password, a PDF pypdf cannot read, a limit met
            raise ScrapeInputError(str(exc)) from exc
        lines += said
        return text

    def _workspace_path(self, relative: str) -> str:
        """The checked workspace-relative save path; refuses anything outside the workspace."""
        if not relative.strip() or os.path.isabs(relative):
            raise ScrapeInputError(f"save_as {relative!r} must be a relative path inside the workspace")
        try:
            parts = workspace_parts(self.workspace, relative)
        except WorkspacePathError as exc:
            raise ScrapeInputError(f"save_as {relative!r} points outside the workspace; refused") from exc
        if not parts:
            raise ScrapeInputError(f"save_as {relative!r} points outside the workspace; refused")
        try:  # fail before downloading when the folder is a link; _save checks again as it writes
            with workspace_dir(self.workspace, parts[:-1]):
                pass
        except WorkspacePathError as exc:
            if not isinstance(exc.__cause__, FileNotFoundError):
                raise ScrapeInputError(f"save_as {relative!r} refused: {exc}") from exc
        return "/".join(parts)

    def _save(self, target: str | None, result: FetchResult) -> str:
        """Write the raw body (to downloads/ under a free name when target is None); 'path (size)'."""
        if result.truncated:
            raise ScrapeInputError("the body exceeds SCRAPE_MAX_BYTES, so it was not saved")
        try:
            if target is None:
                shown = create_new_file(self.workspace, "downloads", free_names(download_name(result)),
                                        result.body)
            else:
                shown = replace_file(self.workspace, target, result.body)
        except WorkspacePathError as exc:
            raise ScrapeInputError(f"could not save the file: {exc}") from exc
        except OSError as exc:
            raise ScrapeInputError(f"could not save the file: {exc.strerror or exc}") from exc
        return f"{shown} ({len(result.body):,} bytes)"


def free_names(name: str) -> Iterator[str]:
    """name, then name-1, name-2, ... (the first one not taken is used)."""
    stem, suffix = Path(name).stem, Path(name).suffix
    yield name
    for n in range(1, 10_000):
        yield f"{stem}-{n}{suffix}"
