"""What attachments this installation can read: document formats, images (look), audio (transcribe), video (watch)."""

from __future__ import annotations

import importlib.util
import shutil
from typing import NamedTuple

from config import Settings
from tools.media.look import vision_spec
from tools.media.transcribe import transcribe_spec

# (format, module, pip package); formats needing no extra package are listed in ALWAYS.
FORMAT_LIBRARIES = [("DOCX", "docx", "python-docx"), ("PPTX", "pptx", "python-pptx"),
                    ("XLSX", "openpyxl", "openpyxl"), ("XLS", "xlrd", "xlrd")]
ALWAYS = "PDF, ODS, CSV, EPUB, ZIP, HTML, JSON, XML"


class Capability(NamedTuple):
    """One line of check_setup's report: name, ok / warn, what works, how to get the rest."""

    name: str
    ok: bool
    detail: str
    fix: str = ""


def installed(module: str) -> bool:
    """True when the module can be imported (checked without importing it)."""
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def document_formats() -> Capability:
    """Which document formats read_file and scrape convert to Markdown."""
    have = [name for name, module, _ in FORMAT_LIBRARIES if installed(module)]
    missing = [(name, package) for name, module, package in FORMAT_LIBRARIES if not installed(module)]
    detail = ", ".join([*have, ALWAYS])
    if not missing:
        return Capability("documents", True, detail)
    names = ", ".join(name for name, _ in missing)
    return Capability("documents", False, f"{detail}; not {names}",
                      "pip install " + " ".join(package for _, package in missing))


def images(settings: Settings) -> Capability:
    """Whether look has a vision model, can downscale images and can render PDF pages."""
    spec, main = vision_spec(settings)
    pillow = installed("PIL")
    pages = "PDF pages rendered (pdftoppm)" if shutil.which("pdftoppm") else "PDF pages: embedded pictures"
    if spec is None:
        return _no_vision("images (look)", main)
    detail = f"{spec}; {'downscaling with Pillow' if pillow else 'no Pillow: PNG/JPEG/WebP under 4.5 MB only'}; {pages}"
    return Capability("images (look)", pillow, detail, "" if pillow else "pip install Pillow")


def _no_vision(name: str, main: str) -> Capability:
    """The row of a tool that needs a vision model when there is none: no model at all, or one without images."""
    why = "no model is configured" if main == "(none)" else f"{main} does not accept images"
    return Capability(name, False, f"no vision model: {why}",
                      "set AGENT_VISION_MODEL / --vision-model, e.g. gemini:gemini-2.5-flash")


def audio(settings: Settings) -> Capability:
    """Whether transcribe has a speech-to-text model, can split long files and read YouTube captions."""
    spec = transcribe_spec(settings)
    youtube = "YouTube captions" if installed("youtube_transcript_api") else "no YouTube captions"
    split = "long files split (ffmpeg)" if shutil.which("ffmpeg") else "long files split: WAV only (no ffmpeg)"
    if spec is None:
        return Capability("audio (transcribe)", False, f"no transcription model; {youtube}",
                          "set AGENT_TRANSCRIBE_MODEL (e.g. openai:whisper-1 with OPENAI_API_KEY)")
    return Capability("audio (transcribe)", True, f"{spec}; {split}; {youtube}")


def video(settings: Settings) -> Capability:
    """Whether watch has a model, and reads video files (imageio-ffmpeg's ffmpeg)."""
    spec, main = vision_spec(settings)
    ffmpeg = installed("imageio_ffmpeg")
    if spec is None:
        return _no_vision("video (watch)", main)
    how = "whole videos and YouTube URLs (Gemini)" if spec.startswith("gemini:") else "sampled frames"
    files = "video files read with imageio-ffmpeg" if ffmpeg else "no video files (only YouTube URLs)"
    return Capability("video (watch)", ffmpeg, f"{spec}: {how}; {files}",
                      "" if ffmpeg else "pip install -r requirements-video.txt")


def attachment_capabilities(settings: Settings) -> list[Capability]:
    """The lines check_setup prints about attachments."""
    return [document_formats(), images(settings), audio(settings), video(settings)]
