"""`main.py serve-mcp`: the agent as an MCP server, driven by the SDK's own client, scripted model behind."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is not installed (requirements.txt)")

from mcp import Client, StdioServerParameters  # noqa: E402

from tests.fakes.loopback import LoopbackServer, Request, Response  # noqa: E402
from tests.fakes.providers import openai_reply  # noqa: E402
from tests.fakes.serve_mcp import Served, model_env, serving, with_token  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
STEPS = ['Thought: note it\nAction: write_file\nAction Input: {"path": "n.txt", "content": "42"}',
         'Action: read_file\nAction Input: {"path": "n.txt"}',
         "Final Answer: The answer is 42."]


def _model(req: Request) -> Response:
    if req.method != "POST":
        return Response(404, {"error": {"message": "not here"}})
    turns = sum(1 for m in req.json().get("messages", []) if m.get("role") == "assistant")
    return openai_reply(STEPS[min(turns, len(STEPS) - 1)], 100, 20)


def _serve_mcp(tmp_path: Path, model_url: str, *flags: str) -> StdioServerParameters:
    """`main.py serve-mcp` in tmp_path, on the scripted model at model_url, with no key or setting of the user's."""
    return StdioServerParameters(command=sys.executable, args=[str(ROOT / "main.py"), "serve-mcp", *flags],
                                 env=model_env(tmp_path, model_url), cwd=str(tmp_path))


def test_research_tool_answers_with_sources_cost_and_progress(tmp_path: Path) -> None:
    progress: list[tuple[float, float | None, str | None]] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append((done, total, message))

    async def session(url: str) -> Any:
        async with Client(_serve_mcp(tmp_path, url)) as client:
            listing = await client.list_tools()
            result = await client.call_tool("research", {"question": "What is the answer?"},
                                            progress_callback=on_progress)
            refused = await client.call_tool("deep_research", {"question": "q", "docs": [str(tmp_path)]})
            return listing, result, refused

    with LoopbackServer(_model) as server:
        listing, result, refused = asyncio.run(session(server.url))
    # Started without --docs, the server lets a client research none of the user's folders, and says how to allow.
    assert refused.is_error and "may research no folder of yours: start it with `serve-mcp --docs DIR`" in (
        refused.content[0].text), refused
    tools = {t.name: t for t in listing.tools}
    assert sorted(tools) == ["deep_research", "research"] and "question" in tools["research"].input_schema["properties"]
    assert not result.is_error
    data = result.structured_content
    if "result" in data and isinstance(data["result"], dict):
        data = data["result"]
    assert data["answer"] == "The answer is 42." and data["status"] == "answered"
    assert data["cost_usd"] and data["cost_usd"] > 0 and data["steps"] == 3
    assert [m for _, _, m in progress] == ["step 1: write_file", "step 2: read_file"]
    assert (Path(data["workspace"]) if Path(data["workspace"]).is_absolute() else tmp_path / data["workspace"]
            ).joinpath("n.txt").read_text() == "42"


def test_serve_mcp_over_streamable_http_on_loopback(tmp_path: Path) -> None:
    async def ask(served: Served) -> Any:
        async with Client(with_token(served.url, served.token)) as client:
            return await client.call_tool("research", {"question": "What is the answer?"})

    with LoopbackServer(_model) as server, serving(tmp_path, model_env(tmp_path, server.url)) as served:
        result = asyncio.run(ask(served))
    text = result.content[0].text
    assert "The answer is 42." in text and not result.is_error


def _tool_steps(req: Request) -> Response:
    """shell, edit_file, then two python calls sharing a variable; the answer is what the last one printed."""
    messages = req.json().get("messages", [])
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    steps = [("shell", {"command": "printf 'a,1\\nb,2\\n' > data.csv && wc -l < data.csv"}),
             ("edit_file", {"path": "data.csv", "old_str": "b,2", "new_str": "b,40"}),
             ("python", {"code": "total = sum(int(line.split(',')[1]) for line in open('data.csv'))"}),
             ("python", {"code": "print('total', total)"})]
    if turns < len(steps):
        tool, args = steps[turns]
        return openai_reply(f"Thought: next\nAction: {tool}\nAction Input: {json.dumps(args)}", 100, 20)
    last = str(messages[-1].get("content", ""))
    return openai_reply(f"Final Answer: {'41' if 'total 41' in last else 'not found: ' + last[:200]}", 100, 20)


def test_an_mcp_client_gets_research_done_with_the_shell_the_editor_and_one_python_session(tmp_path: Path) -> None:
    progress: list[str | None] = []

    async def on_progress(done: float, total: float | None, message: str | None) -> None:
        progress.append(message)

    async def session(url: str) -> Any:
        async with Client(_serve_mcp(tmp_path, url)) as client:
            return await client.call_tool("research", {"question": "Sum the column."}, progress_callback=on_progress)

    with LoopbackServer(_tool_steps) as server:
        result = asyncio.run(session(server.url))
    data = result.structured_content
    if "result" in data and isinstance(data["result"], dict):
        data = data["result"]
    assert data["answer"] == "41", data
    assert progress == ["step 1: shell", "step 2: edit_file", "step 3: python", "step 4: python"]


def test_a_failed_call_reaches_the_client_as_its_one_line_reason_and_no_traceback(tmp_path: Path) -> None:
    """A missing docs folder (deep_research), a task that fails (research: the model refuses the request) and a
    rejected key: the SDK's client reads each reason in an isError result, never "Error executing tool" alone;
    the server's stderr holds no traceback."""
    from mcp.client.stdio import stdio_client

    docs = tmp_path / "docs"
    docs.mkdir()

    def model(req: Request) -> Response:
        if "softly" in req.body.decode():  # a request the provider refuses: this task fails, the next may not
            return Response(400, {"error": {"message": "Unsupported parameter: 'stop'.",
                                            "type": "invalid_request_error"}})
        return Response(401, {"error": {"message": "Incorrect API key provided: sk-test.",
                                        "type": "invalid_request_error", "code": "invalid_api_key"}})

    async def session(url: str) -> Any:
        with (tmp_path / "server.err").open("w") as errlog:
            async with Client(stdio_client(_serve_mcp(tmp_path, url, "--docs", str(docs)), errlog=errlog)) as client:
                return [await client.call_tool("deep_research", {"question": "q", "docs": [str(docs / "gone")]}),
                        await client.call_tool("research", {"question": "Fail softly?"}),
                        await client.call_tool("research", {"question": "What is the answer?"})]

    with LoopbackServer(model) as server:
        missing, failed, rejected = asyncio.run(session(server.url))
    texts = []
    for result in (missing, failed, rejected):
        assert result.is_error, result
        (text,) = [c.text for c in result.content]
        assert "\n" not in text
        texts.append(text)
    assert texts[0] == f"Error executing tool deep_research: docs: no such folder: {docs / 'gone'}"
    assert texts[1].startswith("Error executing tool research: the task failed: ") and "Unsupported parameter" in (
        texts[1]), texts[1]
    assert texts[2].startswith("Error executing tool research: OPENAI_API_KEY was rejected (401)"), texts[2]
    said = (tmp_path / "server.err").read_text()
    assert "Traceback" not in said and "gone" not in said, said
