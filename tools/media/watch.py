"""The watch tool: a video (a workspace file, a URL or a YouTube video) and a question, answered by a model.

With a Gemini model the video goes to Gemini whole: a file through its File API, a YouTube URL as Gemini
takes it (`file_data`); Gemini sees the frames and hears the sound. With any other vision model, frames
are sampled with ffmpeg (imageio-ffmpeg) and shown as images, with a transcript of the sound track when
a speech-to-text model is set, and YouTube videos are read from their captions. Every path is bounded in
duration, frames and bytes, and its model is a tool model (tools/models.py): --cache, --replay and the
spend caps hold.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from config import Settings
from core.chat import Completion, FileRef, Message
from core.errors import ConfigError, LLMError, TaskStopError, ToolError
from providers.gemini_files import delete_file, upload_video
from tools.base import Tool, ToolOutput
from tools.media.look import NO_MODEL, VisionCallError, load_source, vision_spec
from tools.media.transcribe import YOUTUBE, render, transcribe_audio, transcribe_spec, youtube_transcript
from tools.media.video import VIDEO_MIME, audio_wav, on_disk, probe, sample_frames, video_kind
from tools.models import tool_model

MAX_SECONDS = 1200.0  # the part of a video watched: 20 minutes (Gemini: about 360,000 tokens)
MAX_FRAMES = 16  # frames shown to a non-Gemini model ...
FRAMES_PER_SECOND = 2  # ... and at most this many a second of video (a short clip needs fewer)
MAX_BYTES = 200_000_000  # a video file read from the workspace
MAX_ANSWER_TOKENS = 2048
TRANSCRIPT_CHARS = 12_000


class WatchTool(Tool):
    """Ask a model a question about a video: Gemini watches it whole, other vision models see sampled frames."""

    name = "watch"
    description = (
        "Watch a video (a workspace file, its URL or a YouTube URL) and answer a precise question about it. "
        f"Gemini watches it whole with sound; other models see {MAX_FRAMES} frames. The first "
        f"{int(MAX_SECONDS // 60)} minutes are watched."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Workspace path or URL."},
            "question": {"type": "string", "description": "What to find out from the video."},
        },
        "required": ["path", "question"],
        "additionalProperties": False,
    }
    source_argument = "path"

    def __init__(self, workspace: Path, settings: Settings) -> None:
        self.workspace = Path(workspace)
        self.settings = settings

    def unavailable(self) -> str | None:
        """No vision model: not offered."""
        spec, main = vision_spec(self.settings)
        return NO_MODEL.format(main=main) if spec is None else None

    def run(self, **kwargs: Any) -> ToolOutput:
        """Watch the video with the vision model; the observation is its answer, with the calls' usage."""
        spec, main = vision_spec(self.settings)
        if spec is None:
            raise ToolError(NO_MODEL.format(main=main))
        path, question = str(kwargs["path"]).strip(), str(kwargs["question"]).strip()
        youtube = YOUTUBE.search(path)
        if youtube:
            return self._youtube(spec, path, youtube.group(1), question)
        data, name, sources = load_source(self.workspace, self.settings, path)
        limit = max(self.settings.scrape_max_bytes, 50_000_000) if not sources else self.settings.scrape_max_bytes
        if len(data) >= min(limit, MAX_BYTES):
            raise ToolError(f"{name} is larger than watch reads ({min(limit, MAX_BYTES):,} bytes); cut it with "
                            "the python tool first")
        kind = video_kind(name, data)
        with on_disk(data, kind) as file:
            info = probe(file)
            seconds = min(info.seconds, MAX_SECONDS)
            if spec.startswith("gemini:"):
                text, usage = self._gemini_file(spec, data, VIDEO_MIME[kind], name, seconds, question)
            else:
                text, usage = self._frames(spec, file, name, seconds, info.audio, question)
        cut = f", the first {seconds:g} of {info.seconds:g} s" if info.seconds > seconds else f", {seconds:g} s"
        return ToolOutput(f"{spec} watched {name}{cut}:\n{text}", sources, usage=usage)

    def _youtube(self, spec: str, url: str, video_id: str, question: str) -> ToolOutput:
        """Gemini takes the YouTube URL itself; other models answer from the video's captions."""
        if spec.startswith("gemini:"):
            ref = FileRef(f"https://www.youtube.com/watch?v={video_id}", "", seconds=MAX_SECONDS)
            completion = self._ask(spec, [_message(question, "the video", files=[ref])])
            return ToolOutput(f"{spec} watched YouTube video {video_id}:\n{completion.text.strip()}", [url],
                              usage=[completion])
        try:
            captions = youtube_transcript(video_id, None)
        except ToolError as exc:
            raise ToolError(f"{spec} cannot watch YouTube videos (only Gemini can: set --vision-model "
                            f"gemini:gemini-2.5-flash) and the captions could not be read: {exc}") from exc
        prompt = (f"{question}\n\nYou cannot see this YouTube video; answer from its captions below, and say so "
                  f"if they do not tell.\n\n{captions[:TRANSCRIPT_CHARS]}")
        completion = self._ask(spec, [{"role": "user", "content": prompt}])
        return ToolOutput(f"{spec} read the captions of YouTube video {video_id} (the frames cannot be fetched):"
                          f"\n{completion.text.strip()}", [url], usage=[completion])

    def _gemini_file(self, spec: str, data: bytes, mime: str, name: str, seconds: float,
                     question: str) -> tuple[str, list[Completion]]:
        if self.settings.cache_replay:  # --replay: the cache keys an upload by its content, so none is made
            ref, uploaded = FileRef("", mime, hashlib.sha256(data).hexdigest(), seconds), ""
        else:
            ref, uploaded = upload_video(self.settings, data, mime, name, seconds)
        try:
            completion = self._ask(spec, [_message(question, "the video", files=[ref])])
        finally:
            if uploaded:
                delete_file(self.settings, uploaded)
        return completion.text.strip(), [completion]

    def _frames(self, spec: str, file: Path, name: str, seconds: float, audio: bool,
                question: str) -> tuple[str, list[Completion]]:
        frames = sample_frames(file, seconds, max(1, min(MAX_FRAMES, int(seconds * FRAMES_PER_SECOND))))
        usage: list[Completion] = []
        transcript, said = "", ""
        speech = transcribe_spec(self.settings) if audio else None
        if speech is not None:
            segments, usage = transcribe_audio(self.settings, speech, audio_wav(file, seconds), "wav", name, None)
            transcript = render(name, speech, segments)[:TRANSCRIPT_CHARS]
            said = f"\n\nThe sound track, transcribed:\n{transcript}"
        elif audio:
            said = "\n\n(The video has sound, but no speech-to-text model is set: only the frames are shown.)"
        times = ", ".join(f"{i + 1}: {t:.1f} s" for i, (t, _) in enumerate(frames))
        what = (f"{len(frames)} frames sampled evenly from the first {seconds:g} s of {name}, in order "
                f"(frame: time): {times}.{said}")
        completion = self._ask(spec, [_message(question, what, images=[image for _, image in frames])])
        return completion.text.strip(), [*usage, completion]

    def _ask(self, spec: str, messages: list[Message]) -> Completion:
        try:
            model = tool_model(spec, self.settings)  # like the main model: --cache/--replay, spend caps first
            return model.complete(messages, max_tokens=min(self.settings.max_tokens, MAX_ANSWER_TOKENS),
                                  temperature=0.0)
        except ConfigError as exc:
            raise ToolError(f"the model {spec} cannot be used: {exc}") from exc
        except TaskStopError:  # a spend cap or a --replay miss ends the task, as for the main model
            raise
        except LLMError as exc:
            raise VisionCallError(f"the model {spec} failed to watch: {exc}", list(exc.billed)) from exc


def _message(question: str, what: str, **media: Any) -> Message:
    prompt = (f"{question}\n\nAnswer from {what}. Read numbers and text exactly, give times as mm:ss when they "
              "matter, and say so if something is unclear or not shown.")
    return {"role": "user", "content": prompt, **media}  # type: ignore[typeddict-item]

