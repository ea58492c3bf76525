"""Tools whose result comes from a model or the network (look, transcribe, search) through the cache."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from config import Settings
from core.chat import Completion
from core.errors import TaskStopError, ToolError
from tools.base import Tool, ToolOutput
from tools.cached import cache_network_tools


class FakeLook(Tool):
    """Answers about a workspace image with a model call of its own; counts its runs."""

    name = "look"
    description = "look at an image"
    parameters = {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}

    def __init__(self, workspace: Path) -> None:
        self.workspace, self.runs = workspace, 0

    def run(self, **kwargs: Any) -> ToolOutput:
        self.runs += 1
        data = (self.workspace / kwargs["path"]).read_bytes()
        if not data:
            raise ToolError("the image is empty")
        return ToolOutput(f"I see {data.decode()}", usage=[Completion("cat", prompt_tokens=700, completion_tokens=9,
                                                                      model="openai:gpt-4.1-mini", cost=0.002)])


def _wrapped(tmp_path: Path, replay: bool = False) -> tuple[FakeLook, Tool]:
    look = FakeLook(tmp_path)
    [tool] = cache_network_tools([look], Settings(cache_dir=tmp_path / "cache", cache_replay=replay))
    return look, tool


def test_a_repeated_look_is_answered_from_the_cache_with_its_model_usage(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(b"a cat")
    look, tool = _wrapped(tmp_path)
    first, again = tool.run(path="cat.png"), tool.run(path="cat.png")
    assert look.runs == 1 and isinstance(first, ToolOutput) and isinstance(again, ToolOutput)
    assert again.text == first.text == "I see a cat"
    [used] = again.usage
    assert used.cached and used.cost == 0 and used.original_cost == 0.002 and used.prompt_tokens == 700


def test_a_changed_workspace_file_is_a_new_call(tmp_path: Path) -> None:
    (tmp_path / "cat.png").write_bytes(b"a cat")
    look, tool = _wrapped(tmp_path)
    tool.run(path="cat.png")
    (tmp_path / "cat.png").write_bytes(b"a dog")
    assert tool.run(path="cat.png").text == "I see a dog" and look.runs == 2  # type: ignore[union-attr]


def test_replay_repeats_a_recorded_tool_error_and_fails_on_a_miss(tmp_path: Path) -> None:
    (tmp_path / "empty.png").write_bytes(b"")
    _, tool = _wrapped(tmp_path)
    with pytest.raises(ToolError, match="empty"):
        tool.run(path="empty.png")
    look, replaying = _wrapped(tmp_path, replay=True)
    with pytest.raises(ToolError, match="empty"):
        replaying.run(path="empty.png")
    (tmp_path / "new.png").write_bytes(b"new")
    with pytest.raises(TaskStopError, match="replay: no recorded result of look"):
        replaying.run(path="new.png")
    assert look.runs == 0


def test_a_refused_secret_never_reaches_the_cache_file(tmp_path: Path) -> None:
    from tools.web.search import SearchTool

    settings = Settings(cache_dir=tmp_path / "cache", serper_api_key="serper-key-0123456789abcdef",
                        serper_base_url="http://127.0.0.1:9")
    [tool] = cache_network_tools([SearchTool(settings)], settings)
    for _ in range(2):  # recorded once, then answered the same way
        out = tool.run(query="weather serper-key-0123456789abcdef")
        assert "refused" in (out.text if isinstance(out, ToolOutput) else out)
    stored = b"".join(p.read_bytes() for p in (tmp_path / "cache").rglob("*") if p.is_file())
    assert stored and b"serper-key-0123456789abcdef" not in stored
