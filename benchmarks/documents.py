"""How long read_file's document conversion takes, per page / slide / sheet, on the test fixtures.

The fixtures are the ones the tests write (tests/fakes/documents.py) plus larger variants of them (a 20-slide
deck, a workbook of 5 sheets x 1,000 rows x 8 columns, tests/data/three-pages.pdf). Each file is converted
with tools.documents.convert (what read_file and scrape call) 10 times; the median is printed.

    python benchmarks/documents.py
"""

from __future__ import annotations

import io
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import documents as fx  # noqa: E402
from tools.documents.convert import convert  # noqa: E402

RUNS = 10


def big_deck(slides: int = 20) -> bytes:
    from pptx import Presentation

    deck = Presentation()
    for number in range(slides):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = f"Slide {number}"
        slide.placeholders[1].text = "\n".join(f"Point {i} of slide {number}" for i in range(6))
        slide.notes_slide.notes_text_frame.text = f"Notes for slide {number}"
    buffer = io.BytesIO()
    deck.save(buffer)
    return buffer.getvalue()


def big_book(sheets: int = 5, rows: int = 1_000, cols: int = 8) -> bytes:
    from openpyxl import Workbook

    book = Workbook()
    book.remove(book.active)
    for s in range(sheets):
        sheet = book.create_sheet(f"Sheet{s}")
        sheet.append([f"col{c}" for c in range(cols)])
        for r in range(rows):
            sheet.append([r * c + 0.5 for c in range(cols)])
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def big_docx(paragraphs: int = 200) -> bytes:
    import docx

    document = docx.Document()
    for i in range(paragraphs):
        if i % 20 == 0:
            document.add_heading(f"Section {i // 20}", level=2)
        document.add_paragraph(f"Paragraph {i}: " + "words " * 40)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


CASES: list[tuple[str, Callable[[], bytes], int, str]] = [
    ("sample.docx", lambda: fx.docx_bytes("M"), 1, "document"),
    ("long.docx (200 paragraphs, ~4 pages)", big_docx, 4, "page"),
    ("sample.pptx", lambda: fx.pptx_bytes("M"), 2, "slide"),
    ("deck.pptx (20 slides)", big_deck, 20, "slide"),
    ("sample.xlsx", lambda: fx.xlsx_bytes("M"), 2, "sheet"),
    ("big.xlsx (5 x 1,000 x 8)", big_book, 5, "sheet"),
    ("sample.xls", lambda: fx.xls_bytes("M"), 1, "sheet"),
    ("sample.ods", lambda: fx.ods_bytes("M"), 1, "sheet"),
    ("sample.epub", lambda: fx.epub_bytes("M"), 2, "chapter"),
    ("three-pages.pdf", lambda: (Path(__file__).parent.parent / "tests/data/three-pages.pdf").read_bytes(), 3,
     "page"),
]


def measure(name: str, data: bytes) -> tuple[float, int]:
    """Median seconds of one conversion, and the Markdown's length."""
    times, chars = [], 0
    for _ in range(RUNS):
        start = time.perf_counter()
        doc = convert(name.split(" ")[0], data)
        times.append(time.perf_counter() - start)
        chars = len(doc.text) if doc else 0
    return statistics.median(times), chars


def main() -> None:
    """Print one table row per fixture."""
    print(f"| File | Size | Units | Markdown chars | ms per file | ms per unit |  (median of {RUNS})")
    print("|---|---|---|---|---|---|")
    for name, make, units, unit in CASES:
        data = make()
        seconds, chars = measure(name, data)
        print(f"| {name} | {len(data) / 1024:.0f} KB | {units} {unit}(s) | {chars:,} | {seconds * 1000:.1f} | "
              f"{seconds * 1000 / units:.1f} per {unit} |")


if __name__ == "__main__":
    main()
