"""look and transcribe through the real SDKs against loopback servers speaking each provider's wire format."""

from __future__ import annotations

import base64
import io
import re
from pathlib import Path
from typing import Any

import pytest

from agent import ReActAgent
from config import Settings
from core.errors import ToolError
from tests.fakes import documents as fx
from tests.fakes.loopback import LoopbackServer, Request, Response, routes
from tests.fakes.providers import (
    anthropic_reply,
    anthropic_script,
    gemini_reply,
    gemini_script,
    ollama_reply,
    ollama_script,
    openai_reply,
    openai_script,
)
from tests.fakes.scripted import ScriptedLLM
from tools.media import transcribe as transcribe_module
from tools.media.look import LookTool
from tools.media.transcribe import TranscribeTool

PIL = pytest.importorskip("PIL.Image", reason="Pillow draws the test images and downscales them")
MARK = "NARWHAL-2291"
# Shape of OpenAI's verbose_json transcription (API reference: TranscriptionVerbose / TranscriptionSegment:
# task, language, duration, text, segments[id, seek, start, end, text, tokens, temperature, avg_logprob,
# compression_ratio, no_speech_prob]).
WHISPER_BODY = {
    "task": "transcribe", "language": "english", "duration": 1.0, "text": f"Hello {MARK}.",
    "segments": [{"id": 0, "seek": 0, "start": 0.0, "end": 1.0, "text": f" Hello {MARK}.", "tokens": [50364, 2425],
                  "temperature": 0.0, "avg_logprob": -0.21, "compression_ratio": 0.8, "no_speech_prob": 0.01}],
}


def wide_png(width: int = 3200, height: int = 1000) -> bytes:
    buffer = io.BytesIO()
    PIL.new("RGB", (width, height), (0, 128, 255)).save(buffer, format="PNG")
    return buffer.getvalue()


def decoded_size(data: bytes) -> tuple[int, int]:
    return PIL.open(io.BytesIO(data)).size  # type: ignore[no-any-return]


def gemini_bytes(data: str) -> bytes:
    """google-genai sends bytes as URL-safe base64 (padding optional)."""
    return base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "chart.png").write_bytes(wide_png())
    return folder


def test_openai_main_model_gets_a_downscaled_image_url_and_the_answer_comes_back(ws: Path) -> None:
    script = openai_script(openai_reply(f"The bars read {MARK}.", prompt_tokens=812, completion_tokens=9))
    with LoopbackServer(script) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="sk-test",
                            openai_base_url=server.url + "/v1")
        out = LookTool(ws, settings).run(path="chart.png", question="What do the bars say?")
    assert f"The bars read {MARK}." in out.text and out.text.startswith("openai:gpt-4.1-mini looked at chart.png")
    [part_text, part_image] = script.served[0].json()["messages"][0]["content"]
    assert part_text["type"] == "text" and "What do the bars say?" in part_text["text"]
    url = part_image["image_url"]["url"]
    assert part_image["type"] == "image_url" and url.startswith("data:image/png;base64,")
    assert decoded_size(base64.b64decode(url.split(",", 1)[1])) == (1568, 490)  # long edge cut to 1568
    assert [(c.prompt_tokens, c.completion_tokens) for c in out.usage] == [(812, 9)]


def test_a_text_only_main_model_uses_the_vision_model_anthropic_image_blocks(ws: Path) -> None:
    (ws / "anim.gif").write_bytes(_gif())
    script = anthropic_script(anthropic_reply("A blue square."))
    with LoopbackServer(script) as server:
        settings = Settings(model="ollama:llama3.1", vision_model="anthropic:claude-haiku-4-5",
                            anthropic_api_key="k", anthropic_base_url=server.url)
        out = LookTool(ws, settings).run(path="anim.gif", question="What shape?")
    assert "A blue square." in out.text
    content = script.served[0].json()["messages"][0]["content"]
    image = content[0]
    assert image["type"] == "image" and image["source"]["type"] == "base64"
    assert image["source"]["media_type"] == "image/png"  # GIF converted: not every provider takes GIF
    assert base64.b64decode(image["source"]["data"]).startswith(b"\x89PNG")
    assert content[-1]["type"] == "text" and "What shape?" in content[-1]["text"]


def test_gemini_sends_inline_data_for_a_pdf_page_and_a_pptx_slide(ws: Path) -> None:
    buffer = io.BytesIO()
    PIL.new("RGB", (300, 200), (250, 0, 0)).save(buffer, format="PDF")  # a page that is only a picture
    (ws / "scan.pdf").write_bytes(buffer.getvalue())
    (ws / "deck.pptx").write_bytes(fx.pptx_bytes(MARK))
    script = gemini_script(gemini_reply("Red."))
    with LoopbackServer(script) as server:
        settings = Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g", gemini_base_url=server.url)
        tool = LookTool(ws, settings)
        page = tool.run(path="scan.pdf", question="Colour?", page=1)
        slide = tool.run(path="deck.pptx", question="What is pictured?", page=2)
    assert "Red." in page.text and "(page 1)" in page.text and "Red." in slide.text
    for served in script.served:
        parts = served.json()["contents"][0]["parts"]
        inline = parts[1].get("inlineData") or parts[1].get("inline_data")
        assert inline["mimeType" if "mimeType" in inline else "mime_type"].startswith("image/")
        assert decoded_size(gemini_bytes(inline["data"]))[0] > 0


def test_look_fetches_an_image_url_and_names_it_as_a_source(ws: Path) -> None:
    png = fx.png_bytes()
    handler = _combined(openai_script(openai_reply("Tiny red image.")), {"/img/dot.png": Response(
        body=png, content_type="image/png")})
    with LoopbackServer(handler) as server:
        settings = Settings(model="openai:gpt-4o", openai_api_key="k", openai_base_url=server.url + "/v1",
                            scrape_allow_private=True)
        out = LookTool(ws, settings).run(path=f"{server.url}/img/dot.png", question="What is it?")
    assert out.sources == [f"{server.url}/img/dot.png"] and "Tiny red image." in out.text


def test_without_a_vision_model_the_tool_names_the_setting(ws: Path) -> None:
    with pytest.raises(ToolError, match="--vision-model or AGENT_VISION_MODEL"):
        LookTool(ws, Settings(model="ollama:llama3.1")).run(path="chart.png", question="?")


def test_the_vision_call_counts_in_the_task_usage(ws: Path) -> None:
    script = openai_script(openai_reply("It says 7.", prompt_tokens=1000, completion_tokens=4))
    agent_model = ScriptedLLM(replies=[
        'Thought: look\nAction: look\nAction Input: {"path": "chart.png", "question": "Number?"}',
        "Thought: done\nFinal Answer: 7"])
    with LoopbackServer(script) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1")
        result = ReActAgent(agent_model, [LookTool(ws, settings)], max_steps=3).run("What number is shown?")
    assert result.answer == "7"
    assert result.usage.calls == 3  # two agent turns and the vision call
    assert result.usage.prompt_tokens == 10 + 10 + 1000
    assert "openai:gpt-4.1-mini" in result.usage.models


# ---- transcribe --------------------------------------------------------------------------------------


def whisper_handler(seen: list[Request], body: dict[str, Any] = WHISPER_BODY) -> Any:
    def handle(req: Request) -> Response:
        seen.append(req)
        return Response(body=body)

    return routes({"/v1/audio/transcriptions": handle})


def test_whisper_endpoint_gets_the_wav_as_multipart_and_segments_come_back_timed(ws: Path) -> None:
    wav = fx.wav_bytes(0.5)
    (ws / "talk.wav").write_bytes(wav)
    seen: list[Request] = []
    with LoopbackServer(whisper_handler(seen)) as server:
        settings = Settings(transcribe_model="openai:whisper-1", openai_api_key="k",
                            openai_base_url=server.url + "/v1")
        out = TranscribeTool(ws, settings).run(path="talk.wav")
    assert out.text == f"Transcript of talk.wav (openai:whisper-1, 1 segment(s)):\n[00:00.0 - 00:01.0] Hello {MARK}."
    body = seen[0].body
    assert seen[0].headers["content-type"].startswith("multipart/form-data")
    assert wav in body and b'name="model"\r\n\r\nwhisper-1' in body and b"verbose_json" in body
    assert b'name="timestamp_granularities[]"\r\n\r\nsegment' in body
    assert out.usage[0].cost == 0.0  # a local server (base URL) costs nothing


def test_a_file_over_the_upload_limit_is_split_and_times_are_shifted(ws: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    wav = fx.wav_bytes(3.0)  # 8 kHz, 16-bit mono: 48,000 bytes of frames
    (ws / "long.wav").write_bytes(wav)
    monkeypatch.setattr(transcribe_module, "OPENAI_LIMIT", 20_000)
    seen: list[Request] = []
    with LoopbackServer(whisper_handler(seen)) as server:
        settings = Settings(transcribe_model="openai:whisper-1", openai_base_url=server.url + "/v1")
        out = TranscribeTool(ws, settings).run(path="long.wav")
    assert len(seen) == 3 and all(len(r.body) < 21_000 for r in seen)
    starts = [float(m) for m in re.findall(r"^\[00:(\d\d\.\d)", out.text, re.M)]
    assert starts[0] == 0.0 and 1.0 < starts[1] < starts[2] < 3.0
    assert len(out.usage) == 3


def test_gemini_transcription_sends_inline_audio_and_parses_timed_lines(ws: Path) -> None:
    wav = fx.wav_bytes(0.3)
    (ws / "memo.dat").write_bytes(wav)  # the type comes from the content, not the name
    script = gemini_script(gemini_reply(f"[00:00] Good morning.\n[00:04] The code is {MARK}."))
    with LoopbackServer(script) as server:
        settings = Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g", gemini_base_url=server.url)
        out = TranscribeTool(ws, settings).run(path="memo.dat", language="en")
    assert f"[00:04.0] The code is {MARK}." in out.text and "(gemini:gemini-2.5-flash" in out.text
    parts = script.served[0].json()["contents"][0]["parts"]
    inline = parts[1].get("inlineData") or parts[1].get("inline_data")
    assert gemini_bytes(inline["data"]) == wav
    assert (inline.get("mimeType") or inline.get("mime_type")) == "audio/wav"
    assert out.usage[0].prompt_tokens == 10


def test_without_a_transcription_model_the_tool_names_the_setting(ws: Path) -> None:
    (ws / "a.wav").write_bytes(fx.wav_bytes(0.1))
    with pytest.raises(ToolError, match="--transcribe-model or AGENT_TRANSCRIBE_MODEL"):
        TranscribeTool(ws, Settings(model="anthropic:claude-haiku-4-5")).run(path="a.wav")


def test_transcribe_refuses_files_that_are_not_audio(ws: Path) -> None:
    with pytest.raises(ToolError, match="not an audio file \\(PNG image\\)"):
        TranscribeTool(ws, Settings(transcribe_model="openai:whisper-1")).run(path="chart.png")


def _gif() -> bytes:
    buffer = io.BytesIO()
    frames = [PIL.new("P", (40, 40), i) for i in range(2)]
    frames[0].save(buffer, format="GIF", save_all=True, append_images=frames[1:])
    return buffer.getvalue()


def _combined(script: Any, table: dict[str, Response]) -> Any:
    files = routes(table)

    def handle(req: Request) -> Response:
        return files(req) if req.path in table else script(req)

    return handle


def test_youtube_urls_use_captions_when_the_optional_library_is_installed(ws: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import sys
    import types

    asked: list[tuple[str, list[str]]] = []

    class Snippet:
        def __init__(self, start: float, duration: float, text: str) -> None:
            self.start, self.duration, self.text = start, duration, text

    class FakeApi:  # the 1.x interface of youtube-transcript-api: YouTubeTranscriptApi().fetch(id, languages)
        def fetch(self, video_id: str, languages: list[str]) -> list[Snippet]:
            asked.append((video_id, languages))
            return [Snippet(0.0, 2.5, "Welcome back."), Snippet(62.0, 3.0, f"The answer is {MARK}.")]

    monkeypatch.setitem(sys.modules, "youtube_transcript_api",
                        types.SimpleNamespace(YouTubeTranscriptApi=FakeApi))
    tool = TranscribeTool(ws, Settings())
    out = tool.run(path="https://www.youtube.com/watch?v=L1vXCYZAYYM&t=10s", language="de")
    assert asked == [("L1vXCYZAYYM", ["de", "en"])]
    assert f"[01:02.0 - 01:05.0] The answer is {MARK}." in out.text and out.sources
    monkeypatch.setitem(sys.modules, "youtube_transcript_api", None)
    with pytest.raises(ToolError, match="pip install youtube-transcript-api"):
        tool.run(path="https://youtu.be/L1vXCYZAYYM")


def test_an_image_inside_a_zip_is_looked_at_by_its_member_path(ws: Path) -> None:
    (ws / "photos.zip").write_bytes(fx.zip_bytes({"trip/dot.png": fx.png_bytes()}))
    script = openai_script(openai_reply("A red dot."))
    with LoopbackServer(script) as server:
        settings = Settings(model="openai:gpt-4o", openai_api_key="k", openai_base_url=server.url + "/v1")
        out = LookTool(ws, settings).run(path="photos.zip/trip/dot.png", question="What?")
    assert out.text.startswith("openai:gpt-4o looked at photos.zip/trip/dot.png") and "A red dot." in out.text


def test_a_local_ollama_vision_model_gets_base64_images_on_api_chat(ws: Path) -> None:
    script = ollama_script(ollama_reply("A wide blue banner."))
    with LoopbackServer(script) as server:
        settings = Settings(model="ollama:qwen2.5vl:7b", ollama_base_url=server.url + "/v1")
        out = LookTool(ws, settings).run(path="chart.png", question="Describe it.")
    assert "A wide blue banner." in out.text
    [message] = script.served[0].json()["messages"]
    assert "Describe it." in message["content"]
    assert decoded_size(base64.b64decode(message["images"][0]))[0] == 1568


@pytest.mark.parametrize("spec", ["groq:whisper-large-v3", "stt"])
def test_groq_whisper_and_a_models_file_alias_transcribe_at_their_own_endpoint_with_their_own_key(
        ws: Path, spec: str) -> None:
    from core.models_file import ModelAlias

    (ws / "talk.wav").write_bytes(fx.wav_bytes(0.5))
    seen: list[Request] = []
    with LoopbackServer(lambda req: (seen.append(req), Response(body=WHISPER_BODY))[1]) as server:
        settings = Settings(transcribe_model=spec, openai_api_key="sk-openai-own", provider_keys=(
            ("GROQ_API_KEY", "gsk-groq"), ("STT_KEY", "stt-key")), provider_urls=(
            ("GROQ_BASE_URL", server.url + "/openai/v1"),), model_aliases=(
            ModelAlias("stt", "openai", "whisper-large-v3", base_url=server.url + "/stt/v1", api_key_env="STT_KEY"),))
        out = TranscribeTool(ws, settings).run(path="talk.wav")
    assert f"Hello {MARK}." in out.text
    [request] = seen
    path, key = ("/openai/v1", "gsk-groq") if spec.startswith("groq") else ("/stt/v1", "stt-key")
    assert request.path == path + "/audio/transcriptions" and request.headers["authorization"] == f"Bearer {key}"
    assert b'name="model"\r\n\r\nwhisper-large-v3' in request.body
    assert out.usage[0].cost is None  # another API's price is not known: n/a, never $0
