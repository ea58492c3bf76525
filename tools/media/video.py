"""Videos for the watch tool: type, duration and audio track, sampled frames and the audio track as WAV.

ffmpeg comes from the imageio-ffmpeg package (its own static binary, installed from PyPI: no system
ffmpeg needed), imported when a video is first read.
"""

from __future__ import annotations

import io
import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from core.errors import ToolError
from core.images import Image
from tools.documents.detect import sniff

VIDEO_MIME = {"mp4": "video/mp4", "webm": "video/webm", "avi": "video/x-msvideo", "mov": "video/quicktime"}
FRAME_EDGE = 768  # px, the long edge of a sampled frame: enough to read captions, a few hundred tokens each
FFMPEG_TIMEOUT = 120.0
INSTALL = "pip install imageio-ffmpeg (a PyPI package that brings its own ffmpeg)"


@dataclass(frozen=True)
class VideoInfo:
    """What ffmpeg says about a video: its length in seconds and whether it has sound."""

    seconds: float
    audio: bool


def ffmpeg_exe() -> str:
    """The ffmpeg binary of imageio-ffmpeg."""
    try:
        import imageio_ffmpeg  # optional: a 30 MB wheel with a static ffmpeg, loaded only for videos
    except ImportError as exc:
        raise ToolError(f"reading a video's frames needs ffmpeg: {INSTALL}") from exc
    return str(imageio_ffmpeg.get_ffmpeg_exe())


def video_kind(name: str, data: bytes) -> str:
    """mp4, webm, avi or mov; ToolError naming what the file is when it is not a video."""
    found = sniff(name, data[:64])
    key = found[0] if found else ""
    if key == "mp4" and data[8:10] == b"qt":
        key = "mov"
    if key not in VIDEO_MIME:
        raise ToolError(f"{name} is not a video ({found[1] if found else 'text'}); watch reads MP4, WebM, MOV "
                        "and AVI files and YouTube URLs")
    return key


@contextmanager
def on_disk(data: bytes, kind: str) -> Iterator[Path]:
    """The video in a private temporary file (ffmpeg seeks in it), removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="watch-") as folder:
        path = Path(folder) / f"video.{kind}"
        path.write_bytes(data)
        yield path


def probe(path: Path) -> VideoInfo:
    """The duration and whether there is an audio stream, from ffmpeg's reading of the header."""
    run = subprocess.run([ffmpeg_exe(), "-hide_banner", "-i", str(path)], capture_output=True, text=True,
                         timeout=FFMPEG_TIMEOUT, errors="replace")
    found = re.search(r"Duration: (\d+):(\d+):(\d+(?:\.\d+)?)", run.stderr)
    if not found or "Video:" not in run.stderr:
        raise ToolError(f"ffmpeg cannot read this video: {run.stderr.strip().splitlines()[-1][:200]}")
    hours, minutes, seconds = found.groups()
    return VideoInfo(int(hours) * 3600 + int(minutes) * 60 + float(seconds), bool(re.search(r"Audio:", run.stderr)))


def sample_frames(path: Path, seconds: float, count: int) -> list[tuple[float, Image]]:
    """Up to `count` frames spread evenly over the first `seconds`, each as a JPEG with its time."""
    import imageio_ffmpeg  # optional, as in ffmpeg_exe()
    from PIL import Image as Pil  # optional, as in tools/media/images.py

    ffmpeg_exe()
    rate = count / max(seconds, 0.001)
    scale = f"scale='if(gt(iw,ih),min({FRAME_EDGE},iw),-2)':'if(gt(iw,ih),-2,min({FRAME_EDGE},ih))'"
    reader = imageio_ffmpeg.read_frames(str(path), input_params=["-t", f"{seconds:.3f}"],
                                        output_params=["-vf", f"fps={rate:.6f},{scale}"])
    try:
        meta = next(reader)
        frames = []
        for index, raw in enumerate(reader):
            if index >= count:
                break
            out = io.BytesIO()
            Pil.frombytes("RGB", meta["size"], raw).save(out, "JPEG", quality=85)
            frames.append((index / rate, Image(out.getvalue(), "image/jpeg")))
    finally:
        reader.close()
    if not frames:
        raise ToolError("ffmpeg found no frame in this video")
    return frames


def audio_wav(path: Path, seconds: float) -> bytes:
    """The first `seconds` of the sound track as 16 kHz mono WAV (what speech-to-text wants)."""
    run = subprocess.run([ffmpeg_exe(), "-hide_banner", "-loglevel", "error", "-i", str(path), "-t", f"{seconds:.3f}",
                          "-vn", "-ac", "1", "-ar", "16000", "-f", "wav", "-"], capture_output=True,
                         timeout=FFMPEG_TIMEOUT)
    if run.returncode != 0 or len(run.stdout) <= 44:
        raise ToolError(f"ffmpeg could not read the sound track: {run.stderr.decode(errors='replace')[-200:]}")
    return run.stdout
