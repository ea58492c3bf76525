"""Speech-to-text: the Segment type, and calls to /audio/transcriptions (Whisper, gpt-4o-transcribe) and Gemini."""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from config import Settings
from core.chat import Completion
from core.errors import ToolError
from providers.pricing import cost_usd, load_prices
from tools.media.audio import Chunk

LOCAL_KEY = "not-needed"
# USD per minute of audio (OpenAI's price list); local servers (a base URL) cost nothing.
PER_MINUTE = {"whisper-1": 0.006, "gpt-4o-transcribe": 0.006, "gpt-4o-mini-transcribe": 0.003}
GEMINI_PROMPT = ("Transcribe the speech in this audio exactly, in its original language. Write one line per "
                 "sentence or speaker turn, each starting with its start time as [mm:ss]. Write only the "
                 "transcript.")
_STAMP = re.compile(r"^\s*\[?(?:(\d+):)?(\d{1,2}):(\d{2}(?:\.\d+)?)\]?\s*[-–:]?\s*(.*)$")


@dataclass(frozen=True)
class Segment:
    """One timed piece of a transcript."""

    start: float
    end: float | None
    text: str


def openai_transcribe(settings: Settings, model: str, chunk: Chunk, mime: str, language: str | None,
                      endpoint: tuple[str, str | None] | None = None) -> tuple[list[Segment], Completion]:
    """One upload to {base}/audio/transcriptions; segments with times when the model gives them. `endpoint`:
    (base URL, key) of another OpenAI-compatible API (Groq, an alias's server), whose price is not known."""
    try:
        import openai
    except ImportError as exc:
        raise ToolError("transcription needs the openai package: pip install openai") from exc
    base, key = endpoint or (settings.openai_base_url, settings.openai_api_key)
    client = openai.OpenAI(api_key=key or LOCAL_KEY, base_url=base or "https://api.openai.com/v1",
                           timeout=max(settings.request_timeout, 300.0), max_retries=2)
    # gpt-4o-transcribe and its kin answer only json/text; whisper-1 and local servers give timed segments.
    verbose = "gpt-4o" not in model
    args: dict[str, Any] = {"model": model, "file": (chunk.name, chunk.data, mime),
                            "response_format": "verbose_json" if verbose else "json"}
    if verbose:
        args["timestamp_granularities"] = ["segment"]
    if language:
        args["language"] = language
    started = time.monotonic()
    try:
        result = client.audio.transcriptions.create(**args)
    except openai.OpenAIError as exc:
        raise ToolError(f"transcription with openai:{model} failed: {exc}") from exc
    raw = getattr(result, "segments", None) or []
    segments = [Segment(float(s.start), float(s.end), str(s.text)) for s in raw]
    text = str(getattr(result, "text", "") or "")
    if not segments and text:
        segments = [Segment(0.0, None, text)]
    duration = float(getattr(result, "duration", 0) or 0) or max((s.end or 0 for s in segments), default=0.0)
    usage = getattr(result, "usage", None)
    per_minute = PER_MINUTE.get(model)
    cost = duration / 60 * per_minute if per_minute else None
    cost = None if endpoint else 0.0 if settings.openai_base_url else cost  # another API: n/a; a local server: $0
    completion = Completion(text=text, prompt_tokens=_tokens(usage, "input_tokens"),
                            completion_tokens=_tokens(usage, "output_tokens"), model=f"openai:{model}",
                            latency=time.monotonic() - started, cost=cost)
    return segments, completion


def _tokens(usage: Any, name: str) -> int:
    value = getattr(usage, name, None) if usage is not None else None
    return int(value) if isinstance(value, int | float) else 0


def gemini_transcribe(settings: Settings, model: str, chunk: Chunk, mime: str,
                      language: str | None) -> tuple[list[Segment], Completion]:
    """One generateContent call with the audio as inline_data; '[mm:ss]' lines become segments."""

    try:
        from google import genai
        from google.genai import errors, types
    except ImportError as exc:
        raise ToolError("Gemini transcription needs google-genai: pip install google-genai") from exc
    if not settings.gemini_api_key:
        raise ToolError("Gemini transcription needs GEMINI_API_KEY")
    timeout_ms = int(max(settings.request_timeout, 300) * 1000)
    options = types.HttpOptions(base_url=settings.gemini_base_url, timeout=timeout_ms)
    client = genai.Client(vertexai=False, api_key=settings.gemini_api_key, http_options=options)
    prompt = GEMINI_PROMPT + (f" The language is {language}." if language else "")
    started = time.monotonic()
    try:
        audio = types.Part(inline_data=types.Blob(mime_type=mime, data=chunk.data))
        response = client.models.generate_content(model=model, contents=types.Content(
            role="user", parts=[types.Part(text=prompt), audio]))
    except errors.APIError as exc:
        raise ToolError(f"transcription with gemini:{model} failed: {exc}") from exc
    text = response.text or ""
    usage = response.usage_metadata
    prompt_tokens = (usage.prompt_token_count or 0) if usage else 0
    completion_tokens = ((usage.candidates_token_count or 0) + (usage.thoughts_token_count or 0)) if usage else 0
    completion = Completion(text=text, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                            model=f"gemini:{model}", latency=time.monotonic() - started,
                            cost=cost_usd(model, prompt_tokens, completion_tokens, load_prices(settings.prices_file)))
    return parse_timed_lines(text), completion


def parse_timed_lines(text: str) -> list[Segment]:
    """'[mm:ss] text' lines as segments; a line without a time joins the one before it."""
    segments: list[Segment] = []
    for line in text.splitlines():
        match = _STAMP.match(line)
        if match:
            hours, minutes, seconds, words = match.groups()
            start = int(hours or 0) * 3600 + int(minutes) * 60 + float(seconds)
            segments.append(Segment(start, None, words))
        elif line.strip() and segments:
            last = segments[-1]
            segments[-1] = Segment(last.start, last.end, f"{last.text} {line.strip()}")
        elif line.strip():
            segments.append(Segment(0.0, None, line.strip()))
    return segments
