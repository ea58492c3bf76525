"""Audio for speech-to-text: MIME types, and splitting long files to an endpoint's upload limit."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
import wave
from dataclasses import dataclass
from pathlib import Path

from core.errors import ToolError

MIME = {"mp3": "audio/mpeg", "wav": "audio/wav", "flac": "audio/flac", "ogg": "audio/ogg", "m4a": "audio/mp4",
        "mp4": "video/mp4", "webm": "audio/webm"}


@dataclass(frozen=True)
class Chunk:
    """A piece of an audio file small enough to upload, and where it starts in the whole file."""

    data: bytes
    offset: float
    name: str


def split_audio(data: bytes, key: str, name: str, limit: int) -> list[Chunk]:
    """The file as chunks of at most `limit` bytes: WAV split by frames, other formats by ffmpeg."""
    if len(data) <= limit:
        return [Chunk(data, 0.0, name)]
    if key == "wav":
        return _split_wav(data, name, limit)
    if shutil.which("ffmpeg"):
        return _split_ffmpeg(data, key, name, limit)
    raise ToolError(f"{name} is {len(data):,} bytes, over the transcription endpoint's {limit:,}-byte limit; "
                    "splitting it needs ffmpeg (apt install ffmpeg), or convert it to WAV")


def _split_wav(data: bytes, name: str, limit: int) -> list[Chunk]:
    with wave.open(io.BytesIO(data)) as source:
        params = source.getparams()
        frame_bytes = params.sampwidth * params.nchannels
        per_chunk = max(1, (limit - 1024) // frame_bytes)
        chunks: list[Chunk] = []
        start = 0
        while start < params.nframes:
            frames = source.readframes(per_chunk)
            out = io.BytesIO()
            with wave.open(out, "wb") as piece:
                piece.setparams(params)
                piece.writeframes(frames)
            chunks.append(Chunk(out.getvalue(), start / params.framerate, f"{Path(name).stem}-{len(chunks)}.wav"))
            start += per_chunk
    return chunks


def _split_ffmpeg(data: bytes, key: str, name: str, limit: int) -> list[Chunk]:
    """Cut into equal-length pieces sized by the bitrate the file size implies (copying, not re-encoding)."""
    seconds = _duration_ffprobe(data, key)
    pieces = int(len(data) / (limit * 0.9)) + 1
    length = seconds / pieces if seconds else 600.0
    ext = "m4a" if key in ("m4a", "mp4") else key
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / f"in.{ext}"
        source.write_bytes(data)
        command = ["ffmpeg", "-v", "error", "-i", str(source), "-f", "segment", "-segment_time", f"{length:.1f}",
                   "-c", "copy", "-vn", str(Path(folder) / f"part%03d.{ext}")]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=600)
        except (subprocess.SubprocessError, OSError) as exc:
            raise ToolError(f"ffmpeg could not split {name} ({exc})") from exc
        parts = sorted(Path(folder).glob(f"part*.{ext}"))
        return [Chunk(p.read_bytes(), i * length, f"{Path(name).stem}-{i}.{ext}") for i, p in enumerate(parts)]


def _duration_ffprobe(data: bytes, key: str) -> float:
    if not shutil.which("ffprobe"):
        return 0.0
    with tempfile.NamedTemporaryFile(suffix=f".{key}") as handle:
        handle.write(data)
        handle.flush()
        try:
            out = subprocess.run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of",
                                  "default=nw=1:nk=1", handle.name], capture_output=True, text=True, timeout=60)
            return float(out.stdout.strip() or 0)
        except (subprocess.SubprocessError, OSError, ValueError):
            return 0.0


def clock(seconds: float) -> str:
    """Seconds as mm:ss.s (or h:mm:ss.s), for segment timestamps."""
    minutes, rest = divmod(max(seconds, 0.0), 60)
    hours, minutes = divmod(int(minutes), 60)
    return f"{hours}:{minutes:02d}:{rest:04.1f}" if hours else f"{minutes:02d}:{rest:04.1f}"
