"""Network tools through the cache: search results by their arguments, scrape's fetches by URL."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

from cache.model import STORED_FIELDS, as_cached
from cache.store import CacheStore, content_key, open_store
from config import Settings
from core.chat import Completion
from core.errors import CacheMissError, ToolError
from sources.ledger import Read
from tools.base import Tool, ToolOutput
from tools.secrets_guard import SecretGuard, SecretInRequestError
from tools.web.fetch import FetchError, FetchResult, HTTPStatusError

# Tools whose whole result comes from the network or from a model of their own (look, transcribe).
WHOLE_RESULT_TOOLS = frozenset({"search", "look", "transcribe"})
KEPT_HEADERS = ("content-type", "content-disposition", "location", "last-modified",  # no cookies, no auth
                "cf-mitigated", "retry-after")


def cache_network_tools(tools: list[Tool], settings: Settings) -> list[Tool]:
    """The tools with their network access answered from settings.cache_dir (unchanged when it is unset)."""
    if settings.cache_dir is None:
        return tools
    store = open_store(settings.cache_dir)
    out: list[Tool] = []
    for t in tools:
        for attribute in getattr(t, "fetchers", ("fetcher",)):  # arxiv has two: its API's and the PDF's
            fetcher = getattr(t, attribute, None)
            if fetcher is not None and callable(getattr(fetcher, "get", None)):
                setattr(t, attribute, CachingFetcher(fetcher, store, settings.cache_replay))
        if t.name in WHOLE_RESULT_TOOLS or getattr(t, "network", False):
            t = CachedTool(t, store, settings.cache_replay, SecretGuard(settings))
        out.append(t)
    return out


class CachedTool(Tool):
    """A tool whose results are stored by arguments; an "Error:" result is reused only under --replay."""

    def __init__(self, inner: Tool, store: CacheStore, replay: bool, guard: SecretGuard | None = None) -> None:
        self.inner, self.store, self.replay, self.guard = inner, store, replay, guard
        self.name, self.description, self.parameters = inner.name, inner.description, inner.parameters
        self.brief = inner.brief

    def unavailable(self) -> str | None:
        """The wrapped tool's word on whether it is offered."""
        return self.inner.unavailable()

    def reads(self, args: dict[str, Any], output: ToolOutput) -> list[Read]:
        """What the wrapped tool says a call read."""
        return self.inner.reads(args, output)

    def close(self) -> None:
        """The wrapped tool's task is over."""
        self.inner.close()

    def run(self, **kwargs: Any) -> str | ToolOutput:
        """The recorded result for these arguments, else (unless replaying) a fresh one, recorded."""
        key = content_key("tool", {"tool": self.name, "args": kwargs, "files": self._file_digests(kwargs)})
        entry = self.store.get_tool(key)
        if entry is not None and (entry.ok or self.replay):
            if "error" in entry.meta:
                raise ToolError(entry.meta["error"])
            usage = [as_cached(u) for u in entry.meta.get("usage", [])]
            read = [Read(**{**r, "aliases": tuple(r.get("aliases", ()))}) for r in entry.meta.get("read", [])]
            return ToolOutput(entry.meta["text"], sources=list(entry.meta.get("sources", [])), usage=usage, read=read)
        if self.replay:
            raise CacheMissError(f"replay: no recorded result of {self.name} {kwargs!r}; the call was not made "
                                 "(--replay never uses the network)", key)
        try:
            out = self.inner.run(**kwargs)
        except ToolError as exc:  # kept for --replay only (ok=False), so the replayed task fails the same way
            self.store.put_tool(key, self.name, self._storable(kwargs), False, {"error": str(exc)}, None)
            raise
        output = out if isinstance(out, ToolOutput) else ToolOutput(str(out))
        calls = [{f: getattr(c, f) for f in STORED_FIELDS} for c in output.usage if isinstance(c, Completion)]
        self.store.put_tool(key, self.name, self._storable(kwargs), not output.text.startswith("Error:"),
                            {"text": output.text, "sources": output.sources, "usage": calls,
                             "read": [dataclasses.asdict(r) for r in output.read]}, None)
        return output

    def _storable(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """The arguments as stored beside the result: never with a configured secret in them."""
        if self.guard is None:
            return kwargs
        try:
            self.guard.check(json.dumps(kwargs, ensure_ascii=False), "arguments")
        except SecretInRequestError:
            return {"redacted": "the arguments held a configured secret"}
        return kwargs

    def _file_digests(self, kwargs: dict[str, Any]) -> dict[str, str]:
        """SHA-256 of each argument that names a file in the tool's workspace: a changed file is a new key."""
        workspace = getattr(self.inner, "workspace", None)
        digests = {}
        for name, value in kwargs.items():
            if workspace is None or not isinstance(value, str) or "://" in value:
                continue
            try:
                path = Path(workspace) / value
                if path.is_file():
                    digests[name] = hashlib.sha256(path.read_bytes()).hexdigest()
            except (OSError, ValueError):
                continue
        return digests


class CachingFetcher:
    """A SafeFetcher whose responses (and failures) are stored by URL with their fetch time."""

    def __init__(self, inner: Any, store: CacheStore, replay: bool) -> None:
        self.inner, self.store, self.replay = inner, store, replay

    def get(self, url: str) -> Any:
        """The recorded response for url, else (unless replaying) a fresh one, recorded."""
        key = content_key("fetch", {"url": url, "max_bytes": getattr(self.inner, "max_bytes", None)})
        entry = self.store.get_tool(key)
        if entry is not None and (entry.ok or self.replay):
            m = entry.meta
            if not entry.ok:
                if m.get("status") is not None:  # with the error page's start: a challenge page is named again
                    raise HTTPStatusError(m["error"], m["url"], m["status"], entry.body or b"", m.get("headers"))
                raise FetchError(m["error"], m["url"])
            return FetchResult(m["url"], m["status"], m["headers"], entry.body or b"", m["truncated"],
                               m["redirects"])
        if self.replay:
            raise CacheMissError(f"replay: no recorded fetch of {url}; the request was not made "
                                 "(--replay never uses the network)", key)
        try:
            result = self.inner.get(url)
        except FetchError as exc:
            headers = {k: v for k, v in getattr(exc, "headers", {}).items() if k in KEPT_HEADERS}
            self.store.put_tool(key, "fetch", {"url": url}, False, {
                "url": exc.url, "error": str(exc), "status": getattr(exc, "status", None), "headers": headers},
                getattr(exc, "body", None) or None)
            raise
        headers = {k.lower(): v for k, v in result.headers.items() if k.lower() in KEPT_HEADERS}
        self.store.put_tool(key, "fetch", {"url": url}, True, {
            "url": result.url, "status": result.status, "headers": headers, "truncated": result.truncated,
            "redirects": list(result.redirects)}, result.body)
        return result
