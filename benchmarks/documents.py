"""How long read_file's document conversion takes, in this process and in the converter's child, on the fixtures.

The fixtures are the ones the tests write (tests/fakes/documents.py) plus larger variants of them (a 20-slide
deck, a workbook of 5 sheets x 1,000 rows x 8 columns, tests/data/three-pages.pdf). Each file is converted
RUNS times both ways, turn about: with tools.documents.convert.convert in this process (what read_file and
scrape did before issue 52), and with tools.documents.confined.convert in a forked child of the fork server
under its memory and time limits (what they do now). Wall medians, and CPU per file, which the machine's load
distorts less: this process's CPU time, plus, for the child, the fork server's and its reaped children's
(/proc/PID/stat). The first conversion of each format (the server's start and warm-up) is not counted.

A second table does the same for the other parsers issue 58 moved into the child: look's pictures (an image sent
as it is, a photo downscaled, a PDF page's picture) with tools.documents.pictures here and
tools.documents.confined.pictures in a child, and a fetched page's reading (its title and main text:
worker.page_reading here, confined.page_reading in a child) on tests/data/article.html and a 100 KB news page.

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
from tests.fakes.bombs import pdf_image_bomb  # noqa: E402
from tools.documents import confined, worker  # noqa: E402
from tools.documents.confined import convert as convert_in_child  # noqa: E402
from tools.documents.convert import convert  # noqa: E402
from tools.documents.pictures import pictures  # noqa: E402

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


def photo(width: int, height: int, kind: str) -> bytes:
    """A picture of smooth colour with boxes drawn on it (a chart's or a screenshot's kind: noise would make the
    PNG encoding, the same here and in a child, take seconds)."""
    from PIL import Image, ImageDraw

    red = Image.linear_gradient("L").resize((width, height))
    picture = Image.merge("RGB", (red, red.transpose(Image.Transpose.ROTATE_90).resize((width, height)), red))
    draw = ImageDraw.Draw(picture)
    for i in range(40):
        draw.rectangle((i * width // 40, height // 3, i * width // 40 + width // 60, height - 10), fill=(i * 6, 90, 30))
    buffer = io.BytesIO()
    picture.save(buffer, format=kind)
    return buffer.getvalue()


def news_page(paragraphs: int = 60) -> bytes:
    """A news page of about 100 KB: navigation, an article, a sidebar of links, a footer and scripts."""
    nav = "".join(f"<li><a href='/s{i}'>Section {i}</a></li>" for i in range(40))
    body = "".join(f"<p>Paragraph {i} of the report on the harbour's cargo, which grew by {i}.5 per cent as "
                   "the new terminal opened and ships waited less at the quay than in any year before.</p>"
                   for i in range(paragraphs))
    side = "".join(f"<li><a href='/a{i}'>Another story number {i} worth reading</a></li>" for i in range(80))
    script = "<script>var tracking = {" + ",".join(f"k{i}: {i}" for i in range(2000)) + "};</script>"
    return (f"<!doctype html><html><head><title>Harbour cargo grows</title>{script}</head><body><nav><ul>{nav}"
            f"</ul></nav><main><article><h1>Harbour cargo grows</h1>{body}</article><aside><ul>{side}</ul>"
            f"</aside></main><footer>Copyright</footer></body></html>").encode()


PAGE_URL = "https://example.org/news/harbour"
PARSERS: list[tuple[str, Callable[[], bytes], Callable[[bytes], object], Callable[[bytes], object]]] = [
    ("chart.png (1,200 x 800: sent as it is)", lambda: photo(1200, 800, "PNG"),
     lambda d: pictures(d, "chart.png", None), lambda d: confined.pictures(d, "chart.png", None, False)),
    ("photo.jpg (3,000 x 2,000: downscaled)", lambda: photo(3000, 2000, "JPEG"),
     lambda d: pictures(d, "photo.jpg", None), lambda d: confined.pictures(d, "photo.jpg", None, False)),
    ("scan.pdf page 1 (one 1,000 x 1,000 picture)", lambda: pdf_image_bomb(names=1, side=1_000),
     lambda d: pictures(d, "scan.pdf", 1), lambda d: confined.pictures(d, "scan.pdf", 1, False)),
    ("article.html (a page's title and text)", lambda: (Path(__file__).parent.parent / "tests/data/article.html")
     .read_bytes(), lambda d: worker.page_reading(d, PAGE_URL),
     lambda d: confined.page_reading(d.decode(), PAGE_URL)),
    ("news.html (100 KB)", news_page, lambda d: worker.page_reading(d, PAGE_URL),
     lambda d: confined.page_reading(d.decode(), PAGE_URL)),
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


def measure(name: str, data: bytes, here_call: Callable[[bytes], object] | None = None,
            child_call: Callable[[bytes], object] | None = None) -> tuple[float, float, float, float, int]:
    """Median wall seconds here and in a child (turn about), CPU seconds per file here and in a child (each over
    RUNS in a row: the server's CPU is counted in clock ticks, so one call alone would round to 0 or 10 ms), and
    the Markdown's length. The calls default to the conversion of the file named `name` here and in a child."""
    file = name.split(" ")[0]
    here_call = here_call or (lambda d: convert(file, d))
    child_call = child_call or (lambda d: convert_in_child(file, d))
    doc = here_call(data)
    child_call(data)  # the server's start and this format's warm-up are not counted
    here, child = [], []
    for _ in range(RUNS):
        start = time.perf_counter()
        here_call(data)
        here.append(time.perf_counter() - start)
        start = time.perf_counter()
        child_call(data)
        child.append(time.perf_counter() - start)
    cpu = time.process_time()
    for _ in range(RUNS):
        here_call(data)
    cpu_here = (time.process_time() - cpu) / RUNS
    cpu, server = time.process_time(), fork_server_cpu()
    for _ in range(RUNS):
        child_call(data)
    agent = time.process_time() - cpu
    time.sleep(0.2)  # the last child has ended and been reaped: its CPU is in the server's
    cpu_child = (agent + fork_server_cpu() - server) / RUNS
    chars = len(doc.text) if hasattr(doc, "text") else len(str(doc))
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
    print("\nlook's pictures and scrape's pages (issue 58): here as the agent did, then in the converter's child")
    print("| File | Size | here | in a child | more | CPU here | CPU in a child | more CPU |\n"
          "|---|---|---|---|---|---|---|---|")
    more, more_cpu = [], []
    for name, make, here_call, child_call in PARSERS:
        data = make()
        here, child, cpu_here, cpu_child, _ = measure(name, data, here_call, child_call)
        more.append(child - here)
        more_cpu.append(cpu_child - cpu_here)
        print(f"| {name} | {len(data) / 1024:.0f} KB | {here * 1000:.1f} | {child * 1000:.1f} | "
              f"{(child - here) * 1000:+.1f} | {cpu_here * 1000:.1f} | {cpu_child * 1000:.1f} | "
              f"{(cpu_child - cpu_here) * 1000:+.1f} |")
    print(f"a child adds {statistics.median(more) * 1000:.1f} ms wall and {statistics.median(more_cpu) * 1000:.1f} "
          "ms CPU per picture or page, the median (goal: under 20 ms)")


if __name__ == "__main__":
    main()
