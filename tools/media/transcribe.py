"""The transcribe tool: speech in an audio file (or a YouTube video's captions) as text with timestamps."""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from config import Settings
from core.chat import Completion, split_spec
from core.errors import ToolError
from providers.hosts import openai_endpoint
from tools.base import Tool, ToolOutput
from tools.documents.detect import sniff
from tools.media.audio import MIME, clock, split_audio
from tools.media.look import load_source
from tools.media.speech import Segment, gemini_transcribe, openai_transcribe

OPENAI_LIMIT = 25_000_000 - 500_000  # OpenAI's upload limit is 25 MB; leave room for the form fields
GEMINI_LIMIT = 18_000_000  # inline data: a whole generateContent request must stay under 20 MB
YOUTUBE = re.compile(r"(?:youtube\.com/(?:watch\?(?:.*&)?v=|shorts/|embed/|live/)|youtu\.be/)([\w-]{11})")
NO_MODEL = ("no transcription model is configured: set --transcribe-model or AGENT_TRANSCRIBE_MODEL (e.g. "
            "openai:whisper-1 with OPENAI_API_KEY, a local Whisper server as openai:MODEL with OPENAI_BASE_URL, "
            "or gemini:gemini-2.5-flash with GEMINI_API_KEY)")


def transcribe_spec(settings: Settings) -> str | None:
    """AGENT_TRANSCRIBE_MODEL, else whisper-1 with an OpenAI key, else the main model if it is Gemini."""
    if settings.transcribe_model:
        return settings.transcribe_model
    if settings.openai_api_key and not settings.openai_base_url:
        return "openai:whisper-1"
    if settings.model and settings.model.startswith("gemini:"):
        return settings.model
    return "gemini:gemini-2.5-flash" if settings.gemini_api_key else None


class TranscribeTool(Tool):
    """Turn speech into text with timestamps (audio files, audio URLs, YouTube captions)."""

    name = "transcribe"
    brief = "Transcribe speech from an audio file, its URL or a YouTube video."
    description = (
        "Transcribe speech with timestamps: a workspace audio file (MP3, WAV, M4A, OGG, FLAC, or a video's "
        "sound), its URL, or a YouTube URL (its captions)."
    )
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "Workspace path or URL."},
            "language": {"type": "string", "description": "ISO-639-1 code, e.g. 'en'."},
        },
        "required": ["path"],
        "additionalProperties": False,
    }

    def __init__(self, workspace: Path, settings: Settings) -> None:
        self.workspace = Path(workspace)
        self.settings = settings

    def unavailable(self) -> str | None:
        """No speech model and no YouTube captions library: not offered."""
        has_captions = importlib.util.find_spec("youtube_transcript_api") is not None
        return NO_MODEL if transcribe_spec(self.settings) is None and not has_captions else None

    def run(self, **kwargs: Any) -> ToolOutput:
        """Transcribe the file chunk by chunk; the observation lists '[start - end] text' lines."""
        path, language = str(kwargs["path"]).strip(), kwargs.get("language") or None
        video = YOUTUBE.search(path)
        if video:
            return ToolOutput(youtube_transcript(video.group(1), language), [path])
        spec = transcribe_spec(self.settings)
        if spec is None:
            raise ToolError(NO_MODEL)
        data, name, sources = load_source(self.workspace, self.settings, path)
        found = sniff(name, data[:64])
        if found is None or found[0] not in MIME:
            what = found[1] if found else "text"
            raise ToolError(f"{name} is not an audio file ({what}); transcribe reads MP3, WAV, M4A, OGG, FLAC, "
                            "MP4 and WebM")
        segments, usage = transcribe_audio(self.settings, spec, data, found[0], name, language)
        return ToolOutput(render(name, spec, segments), sources, usage=usage)


def transcribe_audio(settings: Settings, spec: str, data: bytes, key: str, name: str,
                     language: str | None) -> tuple[list[Segment], list[Completion]]:
    """Speech to text with `spec`, chunk by chunk (split to the endpoint's size limit), times shifted into place."""
    alias = settings.alias(spec)
    provider, model = (alias.provider, alias.model) if alias else split_spec(spec)
    hosted = openai_endpoint(spec, settings)  # Groq's Whisper, a models-file alias's own server
    backend: Callable[..., Any]
    if hosted is not None:
        model, endpoint = hosted[1], hosted[2:]
        backend, limit = partial(openai_transcribe, endpoint=endpoint), OPENAI_LIMIT
    elif provider in ("openai", "ollama"):
        backend, limit = openai_transcribe, OPENAI_LIMIT
    elif provider == "gemini":
        backend, limit = gemini_transcribe, GEMINI_LIMIT
    else:
        raise ToolError(f"{provider or spec} has no speech-to-text API; set AGENT_TRANSCRIBE_MODEL to an openai: or "
                        "gemini: model")
    segments, usage = [], []
    for chunk in split_audio(data, key, name, limit):
        found, completion = backend(settings, model, chunk, MIME[key], language)
        segments += [Segment(s.start + chunk.offset, None if s.end is None else s.end + chunk.offset, s.text)
                     for s in found]
        usage.append(completion)
    return segments, usage


def render(name: str, spec: str, segments: list[Segment]) -> str:
    """The observation: a header, then one '[start - end] text' line per segment."""
    if not segments or not any(s.text.strip() for s in segments):
        return f"{spec} found no speech in {name}."
    lines = [f"Transcript of {name} ({spec}, {len(segments)} segment(s)):"]
    for s in segments:
        span = clock(s.start) + (f" - {clock(s.end)}" if s.end is not None else "")
        lines.append(f"[{span}] {s.text.strip()}")
    return "\n".join(lines)


def youtube_transcript(video_id: str, language: str | None) -> str:
    """A YouTube video's captions through youtube-transcript-api (optional), one timed line per caption."""
    try:
        from youtube_transcript_api import YouTubeTranscriptApi
    except ImportError as exc:
        raise ToolError("YouTube transcripts need youtube-transcript-api: pip install youtube-transcript-api") \
            from exc
    languages = [language, "en"] if language else ["en"]
    try:
        if hasattr(YouTubeTranscriptApi, "fetch"):  # 1.x
            raw = [{"start": s.start, "duration": s.duration, "text": s.text}
                   for s in YouTubeTranscriptApi().fetch(video_id, languages=languages)]
        else:  # 0.x
            raw = YouTubeTranscriptApi.get_transcript(video_id, languages=languages)
    except Exception as exc:  # noqa: BLE001 - the library raises one class per YouTube refusal
        raise ToolError(f"no transcript for YouTube video {video_id}: {type(exc).__name__}: {exc}") from exc
    segments = [Segment(float(r["start"]), float(r["start"]) + float(r.get("duration") or 0), str(r["text"]))
                for r in raw]
    return render(f"YouTube video {video_id}", "YouTube captions", segments)
