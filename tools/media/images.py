"""Images for vision models: a file, a PDF page or a slide's pictures, made in the converter's child.

The decoding and downscaling (tools/documents/pictures.py) runs in a forked child under the documents' memory and
time limits (AGENT_DOC_MEMORY_MB, AGENT_DOC_TIMEOUT: tools/documents/confined.py), so an image that decodes to
gigabytes costs the child, and the observation names the limit. Only a whole PDF page rendered by poppler's
pdftoppm (a program of its own) is made here, then downscaled in the child like any image.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
from pathlib import Path

from core.errors import ToolError
from core.images import Image
from tools.documents.confined import DocLimits, pictures
from tools.documents.errors import ConversionError


def images_of(data: bytes, name: str, page: int | None, limits: DocLimits) -> list[Image]:
    """The image(s) to show: the file itself, or a PDF page / PowerPoint slide's picture(s); ToolError naming the
    limit that stopped the child, or what is wrong with the file."""
    render = shutil.which("pdftoppm") is not None
    try:
        found = pictures(data, name, page, render, limits)
        if found is None:  # a PDF page, checked in the child: rendered here, downscaled there
            shown = f"{name} page {page or 1}"
            found = pictures(_render_with_pdftoppm(data, page or 1), f"{shown}.png", None, False, limits) or []
    except ConversionError as exc:
        raise ToolError(str(exc)) from exc
    return [Image(blob, mime) for blob, mime in found]


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
