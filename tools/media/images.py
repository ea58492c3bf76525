"""Images for vision models: downscaled to provider limits, and pulled out of PDF pages and PPTX slides."""

from __future__ import annotations

import io
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from core.errors import ToolError
from core.images import Image
from tools.documents.detect import IMAGES, sniff
from tools.documents.errors import need

# Anthropic resizes anything with a longer edge than 1568 px and rejects images over 5 MB; OpenAI and
# Gemini take more, so these limits fit every provider.
MAX_EDGE = 1568
MAX_BYTES = 4_500_000
_SENDABLE = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
PILLOW_HINT = "pip install Pillow"


def pillow_available() -> bool:
    """True when Pillow can be imported (downscaling, GIF/BMP/TIFF conversion)."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def prepare_image(data: bytes, name: str) -> Image:
    """The image as PNG/JPEG/WebP within MAX_EDGE and MAX_BYTES (Pillow re-encodes what needs it)."""
    found = sniff(name, data[:64])
    key = found[0] if found else "unknown"
    if key not in IMAGES:
        raise ToolError(f"{name} is not an image ({found[1] if found else 'text'}); look reads PNG, JPEG, GIF, "
                        "WebP, BMP and TIFF files, PDF pages and PowerPoint slides")
    if not pillow_available():
        if key in _SENDABLE and len(data) <= MAX_BYTES:
            return Image(data, _SENDABLE[key])  # sent as is: not downscaled without Pillow
        raise ToolError(f"{name} needs converting or downscaling before a model can see it: {PILLOW_HINT}")
    return _reencode(data, key, name)


def _reencode(data: bytes, key: str, name: str) -> Image:
    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        picture: Any = PILImage.open(io.BytesIO(data))
        picture.seek(0)  # the first frame of an animated GIF or WebP
        width, height = picture.size
        if key in _SENDABLE and max(width, height) <= MAX_EDGE and len(data) <= MAX_BYTES:
            return Image(data, _SENDABLE[key])
        picture = picture.convert("RGBA" if picture.mode in ("RGBA", "LA", "P") else "RGB")
        picture.thumbnail((MAX_EDGE, MAX_EDGE))
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise ToolError(f"{name} could not be decoded as an image ({exc})") from exc
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=True)
    if out.tell() <= MAX_BYTES:
        return Image(out.getvalue(), "image/png")
    out = io.BytesIO()
    picture.convert("RGB").save(out, format="JPEG", quality=85)
    return Image(out.getvalue(), "image/jpeg")


def pdf_page_image(data: bytes, page: int, name: str) -> bytes:
    """Page `page` (1-based) of a PDF as an image: rendered by poppler's pdftoppm when installed, else the
    largest picture embedded in the page (a scanned page is one picture)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if not 1 <= page <= len(reader.pages):
        raise ToolError(f"{name} has {len(reader.pages)} page(s); page {page} does not exist")
    if shutil.which("pdftoppm"):
        return _render_with_pdftoppm(data, page)
    try:
        pictures = [picture.data for picture in reader.pages[page - 1].images]
    except Exception as exc:  # noqa: BLE001 - pypdf's image decoders raise many types
        raise ToolError(f"could not extract the images of page {page} of {name} ({exc})") from exc
    if not pictures:
        raise ToolError(f"page {page} of {name} holds no picture, and rendering whole pages needs poppler's "
                        "pdftoppm (apt install poppler-utils); read its text with read_file instead")
    return max(pictures, key=len)


def _render_with_pdftoppm(data: bytes, page: int) -> bytes:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "in.pdf"
        source.write_bytes(data)
        command = ["pdftoppm", "-f", str(page), "-l", str(page), "-r", "110", "-png", "-singlefile",
                   str(source), str(Path(folder) / "page")]
        try:
            subprocess.run(command, check=True, capture_output=True, timeout=60)
        except (subprocess.SubprocessError, OSError) as exc:
            raise ToolError(f"pdftoppm could not render page {page} ({exc})") from exc
        return (Path(folder) / "page.png").read_bytes()


def pptx_slide_images(data: bytes, slide: int, name: str) -> list[bytes]:
    """The pictures on slide `slide` (1-based) of a PowerPoint file, largest first (at most four)."""
    pptx = need("pptx", "python-pptx")
    deck = pptx.Presentation(io.BytesIO(data))
    if not 1 <= slide <= len(deck.slides):
        raise ToolError(f"{name} has {len(deck.slides)} slide(s); slide {slide} does not exist")
    blobs = [shape.image.blob for shape in deck.slides[slide - 1].shapes if shape.shape_type == 13]
    if not blobs:
        raise ToolError(f"slide {slide} of {name} has no pictures; its text is in read_file('{name}')")
    return sorted(blobs, key=len, reverse=True)[:4]
