"""Gemini's File API: upload a video once, wait until Gemini has processed it, and name it by URI in a prompt.

generateContent takes inline data only up to 20 MB a request; longer videos go through the File API
(files are kept 48 hours by Google and deleted after the call here). The upload is billed nothing; the
call that reads the file is billed by its tokens like any other.
"""

from __future__ import annotations

import hashlib
import io
import time

from config import Settings
from core.chat import FileRef
from core.errors import ToolError

PROCESSING_WAIT = 300.0  # seconds Gemini may take to process an uploaded video
POLL = 1.0


def _client(settings: Settings) -> tuple[object, object, object]:
    try:
        from google import genai
        from google.genai import errors, types
    except ImportError as exc:
        raise ToolError("watching a video with Gemini needs google-genai: pip install google-genai") from exc
    if not settings.gemini_api_key:
        raise ToolError("watching a video with Gemini needs GEMINI_API_KEY")
    options = types.HttpOptions(base_url=settings.gemini_base_url,
                                timeout=int(max(settings.request_timeout, 300) * 1000))
    return genai.Client(vertexai=False, api_key=settings.gemini_api_key, http_options=options), errors, types


def upload_video(settings: Settings, data: bytes, mime: str, name: str, seconds: float,
                 wait: float = PROCESSING_WAIT) -> tuple[FileRef, str]:
    """Upload the video and wait until it is ACTIVE: its FileRef and its File API name (to delete it)."""
    client, errors, types = _client(settings)
    try:
        file = client.files.upload(  # type: ignore[attr-defined]
            file=io.BytesIO(data), config=types.UploadFileConfig(mime_type=mime, display_name=name[:100]))  # type: ignore[attr-defined]
        deadline = time.monotonic() + wait
        while _state(file) == "PROCESSING" and time.monotonic() < deadline:
            time.sleep(POLL)
            file = client.files.get(name=file.name)  # type: ignore[attr-defined]
    except errors.APIError as exc:  # type: ignore[attr-defined]
        raise ToolError(f"uploading {name} to Gemini's File API failed: {exc}") from exc
    state = _state(file)
    if state != "ACTIVE":
        raise ToolError(f"Gemini could not process {name} (file state {state or 'unknown'} after {wait:g} s)")
    ref = FileRef(str(file.uri), str(file.mime_type or mime), hashlib.sha256(data).hexdigest(), seconds)
    return ref, str(file.name)


def delete_file(settings: Settings, name: str) -> None:
    """Remove an uploaded file (best effort: Google deletes it after 48 hours anyway)."""
    try:
        client, errors, _ = _client(settings)
        client.files.delete(name=name)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - the answer is already in hand; a failed clean-up must not lose it
        return


def _state(file: object) -> str:
    state = getattr(file, "state", None)
    return str(getattr(state, "value", state) or "")
