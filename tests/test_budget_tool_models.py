"""The look tool's vision model is built like the main model: spend caps are checked before its call (a refused
call never reaches the loopback vision server), a call that fits is charged once, and --cache/--replay apply."""

from __future__ import annotations

import io
import socket
from pathlib import Path

import pytest

from agent import BUDGET, ReActAgent
from config import Settings
from providers.budget import RunBudget, TaskBudget
from tests.fakes.loopback import LoopbackServer
from tests.fakes.providers import openai_reply, openai_script
from tests.fakes.scripted import ScriptedLLM
from tools.media.look import LookTool

PIL = pytest.importorskip("PIL.Image", reason="Pillow draws the test image")
VISION = "openai:gpt-4.1-mini"  # $0.40 / $1.60 per million tokens (providers/pricing.py)
LOOK = 'Thought: look\nAction: look\nAction Input: {"path": "chart.png", "question": "Number?"}'


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    buffer = io.BytesIO()
    PIL.new("RGB", (1200, 400), (0, 128, 255)).save(buffer, format="PNG")
    (folder / "chart.png").write_bytes(buffer.getvalue())
    return folder


def run_task(ws: Path, settings: Settings) -> tuple[ReActAgent, TaskBudget, object]:
    run = RunBudget.from_settings(settings, ScriptedLLM(["x"]))
    assert run is not None
    main_model, _ = run.task_models(ScriptedLLM([LOOK, "Thought: done\nFinal Answer: 7"], cost_per_call=0.0), None)
    agent = ReActAgent(main_model, [LookTool(ws, settings)], max_steps=3)
    return agent, main_model.budget, agent.run("What number is shown?")  # type: ignore[attr-defined]


def test_a_look_call_over_the_task_cap_is_refused_before_any_request(ws: Path) -> None:
    script = openai_script(openai_reply("It says 7.", prompt_tokens=1000, completion_tokens=4))
    with LoopbackServer(script) as server:
        # Not even the shortest look call (an image of ~1,600 tokens and a 256-token reply) fits while leaving
        # room for the last answering call: over a $0.0015 cap (a $0.005 cap now fits a shortened call).
        settings = Settings(model=VISION, openai_api_key="k", openai_base_url=server.url + "/v1", max_cost=0.0015)
        _, budget, result = run_task(ws, settings)
        posts = [r for r in server.requests if r.method == "POST"]
    assert posts == []  # the refused call never reached the vision server
    assert result.status == BUDGET and result.answer == "7"  # type: ignore[attr-defined]
    assert "--max-cost" in (result.error or "")  # type: ignore[attr-defined]
    assert budget.cost == 0.0


def test_a_look_call_that_fits_is_charged_once(ws: Path) -> None:
    script = openai_script(openai_reply("It says 7.", prompt_tokens=1000, completion_tokens=4))
    with LoopbackServer(script) as server:
        settings = Settings(model=VISION, openai_api_key="k", openai_base_url=server.url + "/v1", max_cost=1.0)
        _, budget, result = run_task(ws, settings)
    vision_cost = (1000 * 0.40 + 4 * 1.60) / 1_000_000
    assert result.answer == "7" and result.usage.calls == 3  # type: ignore[attr-defined]
    assert budget.cost == pytest.approx(vision_cost) and budget.tokens == 10 + 5 + 1004 + 10 + 5


def test_a_look_call_is_recorded_and_replayed_from_the_cache(ws: Path, tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    script = openai_script(openai_reply("It says 7.", prompt_tokens=1000, completion_tokens=4))
    with LoopbackServer(script) as server:
        settings = Settings(model=VISION, openai_api_key="k", openai_base_url=server.url + "/v1",
                            cache_dir=tmp_path / "cache")
        first = LookTool(ws, settings).run(path="chart.png", question="Number?")
    attempts: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise ConnectionRefusedError("no connection during --replay")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    replay = settings.with_overrides(cache_replay=True)
    second = LookTool(ws, replay).run(path="chart.png", question="Number?")
    assert second.text == first.text and "It says 7." in second.text and attempts == []
    assert second.usage[0].cached and second.usage[0].cost == 0.0
