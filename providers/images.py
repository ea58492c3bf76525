"""Images on user turns in each provider's native form: OpenAI image_url, Anthropic image blocks, Gemini inline_data."""

from __future__ import annotations

from typing import Any

from core.chat import Message


def openai_content(message: Message) -> str | list[dict[str, Any]]:
    """Chat Completions content: the plain string, or text and image_url parts (base64 data URLs)."""
    images = message.get("images") or []
    if not images:
        return message["content"]
    parts: list[dict[str, Any]] = [{"type": "text", "text": message["content"]}]
    parts += [{"type": "image_url", "image_url": {"url": image.data_url()}} for image in images]
    return parts


def anthropic_with_images(wire: list[dict[str, Any]], turns: list[Message]) -> list[dict[str, Any]]:
    """Messages API turns with each turn's images put before its text as base64 `image` blocks."""
    out = []
    for body, turn in zip(wire, turns, strict=True):
        images = turn.get("images") or []
        if images:
            text = body["content"]
            blocks = text if isinstance(text, list) else [{"type": "text", "text": text}]
            body = {**body, "content": [
                *({"type": "image", "source": {"type": "base64", "media_type": image.mime, "data": image.base64()}}
                  for image in images), *blocks]}
        out.append(body)
    return out


def gemini_parts(message: Message, types: Any) -> list[Any]:
    """generateContent parts: the text, each image as inline_data (the SDK base64-encodes it), each file by URI."""
    parts = [types.Part(text=message["content"])]
    parts += [types.Part(inline_data=types.Blob(mime_type=image.mime, data=image.data))
              for image in message.get("images") or []]
    parts += [types.Part(file_data=types.FileData(file_uri=f.uri, mime_type=f.mime or None),
                         video_metadata=types.VideoMetadata(end_offset=f"{f.seconds:g}s") if f.seconds else None)
              for f in message.get("files") or []]
    return parts


def ollama_message(message: Message) -> dict[str, Any]:
    """An Ollama /api/chat message: the text, and `images` as a list of plain base64 strings."""
    out: dict[str, Any] = {"role": message["role"], "content": message["content"]}
    images = message.get("images") or []
    if images:
        out["images"] = [image.base64() for image in images]
    return out
