"""serve-mcp's deep_research tool through the SDK's own client: a checked report of sub-questions, with a
progress notification as each sub-question ends (scripted model and loopback pages, as the research tests)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed (requirements.txt)")

from mcp import Client, StdioServerParameters  # noqa: E402

from tests.fakes.loopback import LoopbackServer  # noqa: E402
from tests.test_research import MODEL, PLAN, QUESTION, world  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def test_deep_research_returns_the_checked_report_with_progress_per_sub_question(tmp_path: Path) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def session(url: str) -> Any:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": url + "/v1", "AGENT_MODEL": MODEL,
               "AGENT_ENV_FILE": str(tmp_path / "none.env"), "PATH": os.environ.get("PATH", ""),
               "SCRAPE_ALLOW_PRIVATE_URLS": "1", "SCRAPE_HOST_GAP": "0", "AGENT_SEARCH": "0"}
        params = StdioServerParameters(command=sys.executable, args=[str(ROOT / "main.py"), "serve-mcp", "--docs",
                                                                     str(docs)], env=env, cwd=str(tmp_path))
        async with Client(params) as client:
            listing = await client.list_tools()
            result = await client.call_tool("deep_research", {"question": QUESTION, "breadth": 2, "depth": 1,
                                                              "docs": [str(docs)]}, progress_callback=on_progress)
            return listing, result

    docs = tmp_path / "my-docs"  # the user's own documents (as --docs): the plan is told to search them too
    docs.mkdir()
    (docs / "notes.txt").write_text("Our barges carried 41,200 tonnes on the Rhine in 2024.\n")
    w = world()
    with LoopbackServer(w) as server:
        w.base = server.url
        listing, result = asyncio.run(session(server.url))
    schema = {t.name: t for t in listing.tools}["deep_research"].input_schema["properties"]
    assert {"question", "breadth", "depth", "docs"} <= set(schema)
    assert not result.is_error, result
    data = result.structured_content
    if "result" in data and isinstance(data["result"], dict):
        data = data["result"]
    report = data["report"]
    assert report.startswith(f"# Research report: {QUESTION}")
    assert "**2 claims: 2 supported, 0 unsupported, 0 wrong source, 0 fabricated, 0 not read**" in report
    assert "## Sources" in report and "1. [Rhine freight]" in report and data["partial"] is None
    assert [s["title"] for s in data["sources"]] == ["Rhine freight", "Danube waterway"]
    assert w.calls["plan"] == 1 and w.calls["write"] == 1
    assert "the user's own documents (searched with search_docs)" in w.prompts["plan"][0]
    messages = [m for _, _, m in progress]
    assert messages[0] == "plan: 2 sub-questions"
    ended = sorted(m for m in messages if m and m.startswith("sub-question"))
    assert ended == [f"sub-question 1 answered: {PLAN[0]}", f"sub-question 2 answered: {PLAN[1]}"]
    assert progress[-1][1] == 2.0 and max(d for d, _, _ in progress) == 2.0
