"""How long read_file's document conversion takes, in this process and in the converter's child, on the fixtures.

The fixtures are the ones the tests write (tests/fakes/documents.py) plus larger variants of them (a 20-slide
deck, a workbook of 5 sheets x 1,000 rows x 8 columns, tests/data/three-pages.pdf). Each file is converted
RUNS times both ways, turn about: with tools.documents.convert.convert in this process (what read_file and
scrape did before issue 52), and with tools.documents.confined.convert in a forked child of the fork server
under its memory and time limits (what they do now). Wall medians, and CPU per file, which the machine's load
distorts less: this process's CPU time, plus, for the child, the fork server's and its reaped children's
(/proc/PID/stat). The first conversion of each format (the server's start and warm-up) is not counted.

    python benchmarks/documents.py
"""

from __future__ import annotations

import io
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.fakes import documents as fx  # noqa: E402
from tools.documents.confined import convert as convert_in_child  # noqa: E402
from tools.documents.convert import convert  # noqa: E402

RUNS = 20


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
    ("tiny.csv (one line: the child's own cost)", lambda: b"city,population\n", 1, "table"),
]


def fork_server_cpu() -> float:
    """CPU seconds of this process's fork server and the children it reaped (0 before it starts)."""
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as fh:
            for pid in fh.read().split():
                with open(f"/proc/{pid}/cmdline", "rb") as cmd:
                    if b"fork_server.py" not in cmd.read():
                        continue
                with open(f"/proc/{pid}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
                return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")
    return 0.0


def measure(name: str, data: bytes) -> tuple[float, float, float, float, int]:
    """Median wall seconds here and in a child (turn about), CPU seconds per file here and in a child (each over
    RUNS in a row: the server's CPU is counted in clock ticks, so one call alone would round to 0 or 10 ms), and
    the Markdown's length."""
    file = name.split(" ")[0]
    doc = convert(file, data)
    convert_in_child(file, data)  # the server's start and this format's warm-up are not counted
    here, child = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        convert(file, data)
        here.append(time.perf_counter() - start)
        start = time.perf_counter()
        convert_in_child(file, data)
        child.append(time.perf_counter() - start)
    cpu = time.process_time()
    for _ in range(RUNS):
        convert(file, data)
    cpu_here = (time.process_time() - cpu) / RUNS
    cpu, server = time.process_time(), fork_server_cpu()
    for _ in range(RUNS):
        convert_in_child(file, data)
    agent = time.process_time() - cpu
    time.sleep(0.2)  # the last child has ended and been reaped: its CPU is in the server's
    cpu_child = (agent + fork_server_cpu() - server) / RUNS
    chars = len(doc.text) if doc else 0
    return statistics.median(here), statistics.median(child), cpu_here, cpu_child, chars


def main() -> None:
    """Print one table row per fixture, and the mean of what the child adds."""
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; medians of {RUNS}, ms per file")
    print("| File | Size | Units | Markdown chars | here | in a child | more | CPU here | CPU in a child | more CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    more, more_cpu = [], []
    for name, make, units, unit in CASES:
        data = make()
        here, child, cpu_here, cpu_child, chars = measure(name, data)
        more.append(child - here)
        more_cpu.append(cpu_child - cpu_here)
        print(f"| {name} | {len(data) / 1024:.0f} KB | {units} {unit}(s) | {chars:,} | {here * 1000:.1f} | "
              f"{child * 1000:.1f} | {(child - here) * 1000:+.1f} | {cpu_here * 1000:.1f} | {cpu_child * 1000:.1f} | "
              f"{(cpu_child - cpu_here) * 1000:+.1f} |")
    print(f"a child adds {statistics.median(more) * 1000:.1f} ms wall and {statistics.median(more_cpu) * 1000:.1f} "
          "ms CPU per file, the median of the files (goal: under 20 ms)")


if __name__ == "__main__":
    main()
