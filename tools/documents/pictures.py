"""Pictures for vision models, made from untrusted bytes in the converter's child (worker.look_images runs them).

An image decoded and downscaled to provider limits (Pillow), the picture of a PDF page (the largest image it
draws, each image read once however many names the page gives it) and a slide's pictures. A 13,000 x 13,000 PNG
of 500 KB or a page naming one image a hundred times costs the child its memory or its time, never the agent's
(tools/documents/confined.py). Errors are ConversionError with the words the look tool shows.
"""

from __future__ import annotations

import io
from typing import Any

from tools.documents.detect import IMAGES, ole_format, sniff, zip_format
from tools.documents.errors import ConversionError, need

# Anthropic resizes anything with a longer edge than 1568 px and rejects images over 5 MB; OpenAI and
# Gemini take more, so these limits fit every provider.
MAX_EDGE = 1568
MAX_BYTES = 4_500_000
SENDABLE = {"png": "image/png", "jpeg": "image/jpeg", "webp": "image/webp"}
PILLOW_HINT = "pip install Pillow"
MAX_SLIDE_PICTURES = 4


def pictures(data: bytes, name: str, page: int | None, render: bool = False) -> list[tuple[bytes, str]] | None:
    """The pictures to show for a file: the image itself, a PDF page's or a slide's, each (bytes, MIME type) within
    MAX_EDGE and MAX_BYTES. With `render` (poppler's pdftoppm is at hand) a PDF's page is checked and None is
    returned: the caller renders it and hands the rendering back."""
    found = sniff(name, data[:64])
    key = found[0] if found else ""
    if key == "zip":
        key = zip_format(data)
    elif key == "ole":
        key = ole_format(name)
    if key == "pdf":
        picture = pdf_page_image(data, page or 1, name, render)
        return None if picture is None else [prepare_image(picture, f"{name} page {page or 1}")]
    if key == "pptx":
        return [prepare_image(blob, f"{name} slide {page or 1}") for blob in pptx_slide_images(data, page or 1, name)]
    return [prepare_image(data, name)]


def pillow_available() -> bool:
    """True when Pillow can be imported (downscaling, GIF/BMP/TIFF conversion)."""
    try:
        import PIL.Image  # noqa: F401
    except ImportError:
        return False
    return True


def prepare_image(data: bytes, name: str) -> tuple[bytes, str]:
    """The image as PNG/JPEG/WebP within MAX_EDGE and MAX_BYTES (Pillow re-encodes what needs it)."""
    found = sniff(name, data[:64])
    key = found[0] if found else "unknown"
    if key not in IMAGES:
        raise ConversionError(f"{name} is not an image ({found[1] if found else 'text'}); look reads PNG, JPEG, GIF, "
                              "WebP, BMP and TIFF files, PDF pages and PowerPoint slides")
    if not pillow_available():
        if key in SENDABLE and len(data) <= MAX_BYTES:
            return data, SENDABLE[key]  # sent as is: not downscaled without Pillow
        raise ConversionError(f"{name} needs converting or downscaling before a model can see it: {PILLOW_HINT}")
    return _reencode(data, key, name)


def _reencode(data: bytes, key: str, name: str) -> tuple[bytes, str]:
    import warnings

    from PIL import Image as PILImage
    from PIL import UnidentifiedImageError

    try:
        with warnings.catch_warnings():  # DecompressionBombWarning: the child's memory limit is the guard
            warnings.simplefilter("ignore")
            picture: Any = PILImage.open(io.BytesIO(data))
            picture.seek(0)  # the first frame of an animated GIF or WebP
            width, height = picture.size
            if key in SENDABLE and max(width, height) <= MAX_EDGE and len(data) <= MAX_BYTES:
                return data, SENDABLE[key]
            picture.draft("RGB", (MAX_EDGE, MAX_EDGE))  # a JPEG is decoded at a reduced scale where it can be
            picture = picture.convert("RGBA" if picture.mode in ("RGBA", "LA", "P") else "RGB")
            picture.thumbnail((MAX_EDGE, MAX_EDGE))
    except (UnidentifiedImageError, OSError, ValueError, PILImage.DecompressionBombError) as exc:
        raise ConversionError(f"{name} could not be decoded as an image ({exc})") from exc
    out = io.BytesIO()
    picture.save(out, format="PNG", optimize=True)
    if out.tell() <= MAX_BYTES:
        return out.getvalue(), "image/png"
    out = io.BytesIO()
    picture.convert("RGB").save(out, format="JPEG", quality=85)
    return out.getvalue(), "image/jpeg"


def pdf_page_image(data: bytes, page: int, name: str, render: bool = False) -> bytes | None:
    """Page `page` (1-based) of a PDF as an image: None when the caller renders it (`render`), else the largest
    picture the page draws (a scanned page is one picture)."""
    from pypdf import PdfReader

    reader = PdfReader(io.BytesIO(data))
    if not 1 <= page <= len(reader.pages):
        raise ConversionError(f"{name} has {len(reader.pages)} page(s); page {page} does not exist")
    if render:
        return None
    sheet = reader.pages[page - 1]
    try:
        largest = _largest_image(sheet)
        pictures = [sheet.images[largest].data] if largest else [picture.data for picture in sheet.images]
    except MemoryError:  # the child's memory limit: named as such, not as a damaged file
        raise
    except Exception as exc:  # noqa: BLE001 - pypdf's image decoders raise many types
        raise ConversionError(f"could not extract the images of page {page} of {name} ({exc})") from exc
    if not pictures:
        raise ConversionError(f"page {page} of {name} holds no picture, and rendering whole pages needs poppler's "
                              "pdftoppm (apt install poppler-utils); read its text with read_file instead")
    return max(pictures, key=len)


def _largest_image(sheet: Any) -> str | None:
    """The name of the largest image (by its declared pixels) among the page's own XObjects, each object looked at
    once however many names it has; None when the page names none (its pictures sit in forms: pypdf finds them)."""
    xobjects = (sheet.get("/Resources") or {}).get("/XObject") or {}
    best, seen, largest = None, set(), 0
    for key, ref in xobjects.items():
        number = getattr(ref, "idnum", None)
        if number is not None and number in seen:
            continue
        seen.add(number)
        image = ref.get_object()
        if image.get("/Subtype") != "/Image":
            continue
        pixels = int(image.get("/Width", 0)) * int(image.get("/Height", 0))
        if best is None or pixels > largest:
            best, largest = str(key), pixels
    return best


def pptx_slide_images(data: bytes, slide: int, name: str) -> list[bytes]:
    """The pictures on slide `slide` (1-based) of a PowerPoint file, largest first (at most four)."""
    pptx = need("pptx", "python-pptx")
    deck = pptx.Presentation(io.BytesIO(data))
    if not 1 <= slide <= len(deck.slides):
        raise ConversionError(f"{name} has {len(deck.slides)} slide(s); slide {slide} does not exist")
    blobs = [shape.image.blob for shape in deck.slides[slide - 1].shapes if shape.shape_type == 13]
    if not blobs:
        raise ConversionError(f"slide {slide} of {name} has no pictures; its text is in read_file('{name}')")
    return sorted(blobs, key=len, reverse=True)[:MAX_SLIDE_PICTURES]
