"""An attachment sent with a question or a research: saved under its own cleaned name, at most MAX_UPLOAD."""

from __future__ import annotations

import re
from pathlib import Path

MAX_UPLOAD = 100 * 1024 * 1024  # bytes: an attachment larger than this is refused (413)
MAX_NAME_BYTES = 120  # an attachment's name is cut to this (file systems refuse names over 255 bytes)
_UNSAFE_NAME = re.compile(r"[^\w.\- ]+")


class BadUpload(Exception):
    """An attachment the app cannot take: `status` (413 too large, 400 otherwise) and one line saying why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def save_upload(upload: object, folder: Path) -> list[Path]:
    """The attachment saved under its own (cleaned, shortened) name in `folder`; none when no file was sent."""
    filename = getattr(upload, "filename", None)
    if not filename:
        return []
    target, size = folder / upload_name(str(filename)), 0
    try:
        with target.open("wb") as out:
            while chunk := await upload.read(1 << 20):  # type: ignore[attr-defined]
                size += len(chunk)
                if size > MAX_UPLOAD:
                    raise BadUpload(413, f"the attachment is larger than {MAX_UPLOAD // (1 << 20)} MB")
                out.write(chunk)
    except OSError as exc:
        raise BadUpload(400, f"the attachment could not be saved ({exc.strerror or exc})") from exc
    return [target]


def upload_name(filename: str) -> str:
    """The name an attachment keeps: its last component, odd characters replaced, at most MAX_NAME_BYTES long
    (its extension kept)."""
    name = _UNSAFE_NAME.sub("_", Path(filename.replace("\\", "/")).name).strip(" .") or "attachment"
    stem, dot, suffix = name.rpartition(".")
    if not dot or len(suffix.encode()) > 16:
        stem, suffix = name, ""
    suffix = f".{suffix}" if suffix else ""
    while len((stem + suffix).encode()) > MAX_NAME_BYTES:
        stem = stem[:-1]
    return (stem.strip(" .") or "attachment") + suffix
