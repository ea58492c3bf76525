"""Images attached to chat messages: the bytes, their MIME type, and the encodings providers want."""

from __future__ import annotations

import base64
from dataclasses import dataclass


@dataclass(frozen=True)
class Image:
    """One image to show a vision model: raw bytes (PNG, JPEG, GIF or WebP) and their MIME type."""

    data: bytes
    mime: str

    def base64(self) -> str:
        """The bytes in standard base64, as Anthropic's and Gemini's JSON bodies carry them."""
        return base64.b64encode(self.data).decode("ascii")

    def data_url(self) -> str:
        """A data: URL, as OpenAI's image_url content parts take it."""
        return f"data:{self.mime};base64,{self.base64()}"

    def __repr__(self) -> str:  # traces and logs must not dump megabytes of bytes
        return f"Image({self.mime}, {len(self.data):,} bytes)"
