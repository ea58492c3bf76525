"""watch: a video the tests generate (imageio-ffmpeg), watched by Gemini through a loopback server speaking its
File API and generateContent wire format, and as sampled frames by an OpenAI-compatible vision model."""

from __future__ import annotations

import base64
import io
import json
import math
import re
import socket
import struct
import wave
from pathlib import Path

import pytest

from agent import ReActAgent
from config import Settings
from core.errors import ToolError
from providers import gemini_files
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import gemini_reply, openai_reply
from tests.fakes.scripted import ScriptedLLM
from tools.media.watch import WatchTool

ffmpeg = pytest.importorskip("imageio_ffmpeg", reason="pip install imageio-ffmpeg (ffmpeg from PyPI)")
PIL = pytest.importorskip("PIL.Image", reason="Pillow decodes the sampled frames")
RED, BLUE = (230, 20, 20), (20, 20, 230)
YOUTUBE_ID = "dQw4w9WgXcQ"


def make_video(path: Path, seconds: int = 4, fps: int = 4, sound: Path | None = None) -> bytes:
    """A 64x48 clip: red for the first half, blue for the second (optionally with a sound track)."""
    writer = ffmpeg.write_frames(str(path), (64, 48), fps=fps, macro_block_size=16, audio_path=str(sound) if sound
                                 else None, audio_codec="aac" if sound else None)
    writer.send(None)
    for i in range(seconds * fps):
        writer.send(bytes(RED if i < seconds * fps // 2 else BLUE) * 64 * 48)
    writer.close()
    return path.read_bytes()


def tone(path: Path, seconds: float = 4.0) -> Path:
    with wave.open(str(path), "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(16000)
        out.writeframes(b"".join(struct.pack("<h", int(8000 * math.sin(i / 10))) for i in range(int(16000 * seconds))))
    return path


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


def camel(value: object) -> object:
    """A JSON value with camelCase keys: google-genai 3.x writes snake_case, the API's proto3 JSON takes both."""
    if isinstance(value, dict):
        return {re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k): camel(v) for k, v in value.items()}
    return [camel(v) for v in value] if isinstance(value, list) else value


def colour(data_url: str) -> tuple[int, int, int]:
    image = PIL.open(io.BytesIO(base64.b64decode(data_url.split(",", 1)[1]))).convert("RGB")
    return image.getpixel((image.width // 2, image.height // 2))  # type: ignore[no-any-return]


def near(found: tuple[int, int, int], wanted: tuple[int, int, int]) -> bool:
    return all(abs(a - b) < 40 for a, b in zip(found, wanted, strict=True))


def test_frames_of_a_video_go_to_an_openai_vision_model_in_order_with_their_times(ws: Path) -> None:
    make_video(ws / "clip.mp4")
    with LoopbackServer(lambda req: openai_reply("Red first, then blue.", 900, 6, model="gpt-4.1-mini")) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1")
        out = WatchTool(ws, settings).run(path="clip.mp4", question="Which colours appear, in what order?")
    [request] = server.requests
    content = request.json()["messages"][0]["content"]
    frames = [part["image_url"]["url"] for part in content if part["type"] == "image_url"]
    assert len(frames) == 8  # 4 s at 2 frames a second
    assert near(colour(frames[0]), RED) and near(colour(frames[-1]), BLUE)
    text = content[0]["text"]
    assert "Which colours appear" in text and "8 frames sampled evenly from the first 4 s of clip.mp4" in text
    assert "1: 0.0 s" in text and "8: 3.5 s" in text
    assert out.text == "openai:gpt-4.1-mini watched clip.mp4, 4 s:\nRed first, then blue."
    assert out.usage[0].prompt_tokens == 900 and out.usage[0].cost  # counted in the task's usage and caps


def test_the_sound_track_is_transcribed_beside_the_frames_when_a_speech_model_is_set(ws: Path, tmp_path: Path) -> None:
    make_video(ws / "talk.mp4", sound=tone(tmp_path / "tone.wav"))

    def handle(req: Request) -> Response:
        if req.path.endswith("/audio/transcriptions"):
            assert b"RIFF" in req.body  # the sound track, as WAV
            return Response(200, {"task": "transcribe", "language": "english", "duration": 4.0,
                                  "text": "The code is 7 4 1.", "segments": [
                                      {"id": 0, "seek": 0, "start": 1.0, "end": 3.0, "text": " The code is 7 4 1.",
                                       "tokens": [1], "temperature": 0.0, "avg_logprob": -0.2,
                                       "compression_ratio": 0.8, "no_speech_prob": 0.01}]})
        return openai_reply("The code is 741.", model="gpt-4.1-mini")

    with LoopbackServer(handle) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1",
                            transcribe_model="openai:whisper-1")
        out = WatchTool(ws, settings).run(path="talk.mp4", question="What code is said?")
    chat = [r for r in server.requests if r.path.endswith("/chat/completions")][0]
    assert "[00:01.0 - 00:03.0] The code is 7 4 1." in chat.json()["messages"][0]["content"][0]["text"]
    assert len(out.usage) == 2 and out.text.endswith("The code is 741.")  # transcription and the vision call


class GeminiFiles:
    """Gemini's File API (resumable upload, files.get, files.delete) and generateContent, on loopback."""

    def __init__(self) -> None:
        self.uploaded = b""
        self.deleted: list[str] = []
        self.polls = 0
        self.url = ""

    def __call__(self, req: Request) -> Response:
        path = req.path.split("?", 1)[0]
        if path.endswith("/files") and req.method == "POST" and "upload" in path:  # start a resumable upload
            meta = req.json()["file"]  # google-genai 3.x writes snake_case here; the API takes both
            assert meta.get("mimeType", meta.get("mime_type")) == "video/mp4"
            assert req.headers["x-goog-upload-command"] == "start"
            assert req.headers["x-goog-upload-protocol"] == "resumable"
            assert int(req.headers["x-goog-upload-header-content-length"]) > 0
            return Response(200, {}, headers={"x-goog-upload-url": f"{self.url}/resumable/42",
                                              "x-goog-upload-status": "active"})
        if path == "/resumable/42":
            self.uploaded += req.body
            return Response(200, {"file": self.file("PROCESSING")}, headers={"x-goog-upload-status": "final"})
        if path.endswith("/files/clip42") and req.method == "GET":
            self.polls += 1
            return Response(200, self.file("ACTIVE"))
        if path.endswith("/files/clip42") and req.method == "DELETE":
            self.deleted.append(path)
            return Response(200, {})
        if path.endswith(":generateContent"):
            return gemini_reply("Red, then blue.", 1100, 5, model_version="gemini-2.5-flash")
        return Response(404, {"error": {"code": 404, "message": f"no route {req.method} {path}",
                                        "status": "NOT_FOUND"}})

    def file(self, state: str) -> dict[str, str]:
        return {"name": "files/clip42", "uri": f"{self.url}/v1beta/files/clip42", "mimeType": "video/mp4",
                "state": state, "sizeBytes": str(len(self.uploaded))}


def test_gemini_watches_a_file_through_its_file_api_and_the_upload_is_removed(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemini_files, "POLL", 0.0)
    video = make_video(ws / "clip.mp4")
    api = GeminiFiles()
    with LoopbackServer(api) as server:
        api.url = server.url
        settings = Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g", gemini_base_url=server.url)
        out = WatchTool(ws, settings).run(path="clip.mp4", question="Which colours?")
        generate = [r for r in server.requests if r.path.split("?")[0].endswith(":generateContent")]
    assert api.uploaded == video and api.polls == 1 and api.deleted  # uploaded whole, waited for, removed
    [request] = generate
    parts = camel(request.json())["contents"][0]["parts"]  # type: ignore[index]
    assert "Which colours?" in parts[0]["text"]
    assert parts[1]["fileData"] == {"fileUri": f"{server.url}/v1beta/files/clip42", "mimeType": "video/mp4"}
    assert parts[1]["videoMetadata"] == {"endOffset": "4s"}  # bounded to what was probed (and to 20 minutes)
    assert out.text == "gemini:gemini-2.5-flash watched clip.mp4, 4 s:\nRed, then blue."
    assert out.usage[0].prompt_tokens == 1100


def test_gemini_takes_a_youtube_url_as_file_data_without_downloading_it(ws: Path) -> None:
    with LoopbackServer(lambda req: gemini_reply("A man sings.", model_version="gemini-2.5-flash")) as server:
        settings = Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g", gemini_base_url=server.url)
        out = WatchTool(ws, settings).run(path=f"https://youtu.be/{YOUTUBE_ID}", question="What happens?")
    [request] = server.requests
    part = camel(request.json())["contents"][0]["parts"][1]  # type: ignore[index]
    assert part["fileData"] == {"fileUri": f"https://www.youtube.com/watch?v={YOUTUBE_ID}"}
    assert part["videoMetadata"] == {"endOffset": "1200s"}  # at most 20 minutes watched (and billed)
    assert out.text.endswith("A man sings.") and out.read == [] and out.sources == [f"https://youtu.be/{YOUTUBE_ID}"]


def test_what_cannot_be_watched_gets_a_clear_error(ws: Path) -> None:
    (ws / "notes.txt").write_text("not a video")
    settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url="http://127.0.0.1:9/v1")
    with pytest.raises(ToolError, match=r"notes.txt is not a video \(text\); watch reads MP4"):
        WatchTool(ws, settings).run(path="notes.txt", question="?")
    (ws / "broken.mp4").write_bytes(b"\x00\x00\x00\x18ftypmp42" + b"\x00" * 200)
    with pytest.raises(ToolError, match="ffmpeg cannot read this video"):
        WatchTool(ws, settings).run(path="broken.mp4", question="?")
    with pytest.raises(ToolError, match="does not accept images"):
        WatchTool(ws, Settings(model="ollama:llama3.1")).run(path="notes.txt", question="?")


def test_watch_in_a_task_counts_its_model_call_in_the_task_usage(ws: Path) -> None:
    make_video(ws / "clip.mp4", seconds=2)
    with LoopbackServer(lambda req: openai_reply("Red, then blue.", 500, 5, model="gpt-4.1-mini")) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1")
        agent_model = ScriptedLLM([
            'Thought: watch it\nAction: watch\nAction Input: {"path": "clip.mp4", "question": "Colours?"}',
            "Thought: done\nFinal Answer: red, then blue"])
        result = ReActAgent(agent_model, [WatchTool(ws, settings)], max_steps=3).run("What colours does clip.mp4 show?")
    assert result.answer == "red, then blue" and "Red, then blue." in result.steps[0].observation
    assert result.usage.prompt_tokens == 10 * 2 + 500 and "openai:gpt-4.1-mini" in result.usage.models
    assert json.dumps(result.steps[0].arguments) == '{"path": "clip.mp4", "question": "Colours?"}'


def test_a_gemini_watch_is_recorded_and_replayed_from_the_cache_without_an_upload(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gemini_files, "POLL", 0.0)
    make_video(ws / "clip.mp4")
    api = GeminiFiles()
    with LoopbackServer(api) as server:
        api.url = server.url
        settings = Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g", gemini_base_url=server.url,
                            cache_dir=tmp_path / "cache")
        first = WatchTool(ws, settings).run(path="clip.mp4", question="Which colours?")
    attempts: list[object] = []

    def refuse(sock: socket.socket, address: object) -> None:
        attempts.append(address)
        raise ConnectionRefusedError("no connection during --replay")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    second = WatchTool(ws, settings.with_overrides(cache_replay=True)).run(path="clip.mp4", question="Which colours?")
    assert second.text == first.text and attempts == []  # the cache knows the upload by its content
    assert second.usage[0].cached and second.usage[0].cost == 0.0


def test_check_setup_says_how_videos_are_watched() -> None:
    from tools.capabilities import video

    gemini = video(Settings(model="gemini:gemini-2.5-flash", gemini_api_key="g"))
    assert gemini.ok and "whole videos and YouTube URLs (Gemini)" in gemini.detail
    frames = video(Settings(model="openai:gpt-4.1-mini", openai_api_key="k"))
    assert frames.ok and "sampled frames" in frames.detail and "imageio-ffmpeg" in frames.detail
    assert not video(Settings(model="ollama:llama3.1")).ok


def test_a_video_url_is_downloaded_with_scrapes_rules_and_named_as_the_source(ws: Path, tmp_path: Path) -> None:
    video = make_video(tmp_path / "clip.mp4", seconds=2)

    def handle(req: Request) -> Response:
        if req.path == "/media/clip.mp4":
            return Response(200, video, content_type="video/mp4")
        return openai_reply("Red, then blue.", model="gpt-4.1-mini")

    with LoopbackServer(handle) as server:
        settings = Settings(model="openai:gpt-4.1-mini", openai_api_key="k", openai_base_url=server.url + "/v1",
                            scrape_allow_private=True, ignore_robots=True)
        out = WatchTool(ws, settings).run(path=f"{server.url}/media/clip.mp4", question="Colours?")
        small = settings.with_overrides(scrape_max_bytes=len(video) // 2)
        with pytest.raises(ToolError, match="larger than SCRAPE_MAX_BYTES"):
            WatchTool(ws, small).run(path=f"{server.url}/media/clip.mp4", question="Colours?")
    assert out.sources == [f"{server.url}/media/clip.mp4"] and out.text.startswith(
        "openai:gpt-4.1-mini watched clip.mp4, 2 s:")
