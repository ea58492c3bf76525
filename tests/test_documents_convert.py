"""Documents as text: read_file and scrape turn Office files, spreadsheets, EPUB, ZIP, HTML and PDF into Markdown."""

from __future__ import annotations

import io
import sqlite3
from pathlib import Path

import pytest

from config import Settings
from core.errors import ToolError
from tests.fakes import documents as fx
from tests.fakes.loopback import LoopbackServer, Response, routes
from tools.base import ToolOutput
from tools.files import ReadFileTool
from tools.web.scrape import ScrapeTool

MARK = "QUOKKA-4417"


@pytest.fixture()
def ws(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    return folder


def read(ws: Path, path: str, **kwargs: object) -> str:
    return ReadFileTool(ws).run(path=path, **kwargs)


@pytest.mark.parametrize("ext, kind", [
    ("docx", "Word document"), ("pptx", "PowerPoint presentation"), ("xlsx", "Excel workbook"),
    ("xls", "Excel 97-2003 workbook"), ("ods", "OpenDocument spreadsheet"), ("epub", "EPUB book"),
    ("pdf", "PDF document"), ("csv", "CSV table"), ("html", "HTML page"),
])
def test_every_format_reaches_the_observation_as_markdown(ws: Path, ext: str, kind: str) -> None:
    fx.write_all(ws, MARK)
    out = read(ws, f"sample.{ext}")
    assert out.startswith(f"File sample.{ext} ({kind}, shown as Markdown;")
    assert MARK in out


def test_word_headings_lists_and_merged_table_cells(ws: Path) -> None:
    (ws / "notes.docx").write_bytes(fx.docx_bytes(MARK))
    out = read(ws, "notes.docx")
    assert "# Quarterly notes" in out and "- first point" in out
    # The merged cell spans two grid columns but its text appears once, the grid stays aligned.
    assert "| Merged header |  | Total |" in out and out.count("Merged header") == 1
    assert "| a | b | 42 |" in out


def test_powerpoint_slide_by_slide_with_notes_and_pictures(ws: Path) -> None:
    (ws / "deck.pptx").write_bytes(fx.pptx_bytes(MARK))
    out = read(ws, "deck.pptx")
    first, second = out.index("## Slide 1: Intro"), out.index("## Slide 2: Results")
    assert first < out.index("Welcome everyone") < second < out.index(f"Notes: Remember to mention {MARK}")
    assert "[picture:" in out


def test_spreadsheet_sheets_have_names_cached_formula_values_and_merged_cells_once(ws: Path) -> None:
    import xlsxwriter

    buffer = io.BytesIO()
    book = xlsxwriter.Workbook(buffer)
    sheet = book.add_worksheet("Budget")
    sheet.write_row(0, 0, ["Item", "Cost"])
    sheet.write_column(1, 1, [100, 250])
    sheet.write_formula("B4", "=SUM(B2:B3)", None, 350)  # the value a spreadsheet app would have cached
    sheet.merge_range("D1:F1", "Approved budget")
    book.add_worksheet("Empty")
    book.close()
    (ws / "budget.xlsx").write_bytes(buffer.getvalue())
    out = read(ws, "budget.xlsx")
    assert "## Sheet: Budget" in out and "## Sheet: Empty" in out
    assert "| 4 |  | 350 |" in out and "SUM(" not in out
    assert out.count("Approved budget") == 1 and "Merged cells (value shown in the first cell only): D1:F1" in out


def test_a_formula_never_computed_shows_the_formula_not_an_empty_cell(ws: Path) -> None:
    (ws / "raw.xlsx").write_bytes(fx.xlsx_bytes(MARK))
    assert "=SUM(B2:B4)" in read(ws, "raw.xlsx")


def test_a_large_sheet_is_paged_like_a_text_file(ws: Path) -> None:
    (ws / "big.xlsx").write_bytes(fx.xlsx_bytes(MARK, values=list(range(1, 501))))
    first = read(ws, "big.xlsx", limit=100)
    assert "lines 1-100 of" in first and "offset=101" in first and "| 95 | R94 | 94 |" in first
    second = read(ws, "big.xlsx", offset=101, limit=100)
    assert "| 96 | R95 | 95 |" in second and "| 95 | R94 |" not in second
    last = read(ws, "big.xlsx", offset=500, limit=100)
    assert MARK in last and "more lines" not in last


def test_ods_repeated_empty_rows_do_not_flood_the_table(ws: Path) -> None:
    (ws / "p.ods").write_bytes(fx.ods_bytes(MARK))
    out = read(ws, "p.ods")
    assert "## Sheet: Planets (2 rows x 2 columns)" in out and f"| 2 | {MARK} | 79 |" in out
    assert len(out) < 1_000


def test_zip_is_listed_and_members_are_read_by_path(ws: Path) -> None:
    (ws / "bundle.zip").write_bytes(fx.zip_bytes({"docs/report.docx": fx.docx_bytes(MARK), "a.txt": "alpha"}))
    listing = read(ws, "bundle.zip")
    assert "- docs/report.docx" in listing and "read_file(path='bundle.zip/" in listing
    member = read(ws, "bundle.zip/docs/report.docx")
    assert member.startswith("File bundle.zip/docs/report.docx (Word document") and MARK in member
    assert "alpha" in read(ws, "bundle.zip/a.txt")
    with pytest.raises(ToolError, match="no member 'docs/missing.docx'"):
        read(ws, "bundle.zip/docs/missing.docx")


def test_scanned_pdf_says_so_and_points_to_look(ws: Path) -> None:
    (ws / "scan.pdf").write_bytes(fx.scanned_pdf_bytes())
    out = read(ws, "scan.pdf")
    assert "no text layer" in out and "look tool" in out


def test_json_on_one_long_line_is_pretty_printed_and_xml_is_indented(ws: Path) -> None:
    (ws / "min.json").write_text('{"items": [' + ",".join(f'{{"n": {i}}}' for i in range(600)) + f'], "k": "{MARK}"}}')
    out = read(ws, "min.json", offset=1, limit=2000)
    assert '"n": 599' in out and MARK in out and "line shortened" not in out
    (ws / "min.xml").write_text("<root>" + "<item>x</item>" * 300 + f"<key>{MARK}</key></root>")
    xml = read(ws, "min.xml", limit=2000)
    assert f"  <key>{MARK}</key>" in xml and "line shortened" not in xml


def test_unknown_binary_types_are_detected_by_content_not_name(ws: Path) -> None:
    db = ws / "data.bin"
    with sqlite3.connect(db) as conn:
        conn.execute("create table t (x)")
    size = db.stat().st_size
    assert read(ws, "data.bin") == (f"data.bin is a binary file (SQLite database, {size:,} bytes); it is not "
                                    "shown as text. Use the python tool to process it.")
    (ws / "talk.dat").write_bytes(fx.wav_bytes(0.1))
    assert "WAV audio" in read(ws, "talk.dat") and "transcribe(path='talk.dat')" in read(ws, "talk.dat")
    (ws / "photo.txt").write_bytes(fx.png_bytes())
    assert "PNG image" in read(ws, "photo.txt") and "look(path='photo.txt'" in read(ws, "photo.txt")


def test_damaged_office_file_is_a_recoverable_error(ws: Path) -> None:
    (ws / "broken.docx").write_bytes(fx.zip_bytes({"word/document.xml": "<not-xml"}))
    with pytest.raises(ToolError, match="could not convert broken.docx"):
        read(ws, "broken.docx")


def test_scrape_returns_markdown_for_office_downloads_and_keeps_the_file(tmp_path: Path) -> None:
    pptx = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
    table = {"/deck": Response(body=fx.pptx_bytes(MARK), content_type=pptx),
             "/book.epub": Response(body=fx.epub_bytes(MARK), content_type="application/epub+zip")}
    tool = ScrapeTool(tmp_path / "ws", Settings(scrape_allow_private=True, scrape_timeout=2.0))
    with LoopbackServer(routes(table)) as server:
        deck = tool.run(url=f"{server.url}/deck")
        book = tool.run(url=f"{server.url}/book.epub")
    assert isinstance(deck, ToolOutput) and isinstance(book, ToolOutput)
    assert "PowerPoint presentation, shown as Markdown." in deck.text and f"mention {MARK}" in deck.text
    assert "saved to downloads/deck.pptx" in deck.text
    assert (tmp_path / "ws" / "downloads" / "deck.pptx").is_file()
    assert f"The butler was {MARK}" in book.text


def test_scrape_of_a_scanned_pdf_points_to_look(tmp_path: Path) -> None:
    tool = ScrapeTool(tmp_path / "ws", Settings(scrape_allow_private=True, scrape_timeout=2.0))
    with LoopbackServer(routes({"/s.pdf": Response(body=fx.scanned_pdf_bytes(),
                                                   content_type="application/pdf")})) as server:
        out = tool.run(url=f"{server.url}/s.pdf")
    assert isinstance(out, ToolOutput) and "no text layer" in out.text


def test_a_pdf_pypdf_cannot_read_is_one_clear_error_in_read_file_and_scrape(ws: Path) -> None:
    broken = b"%PDF-1.7\n" + b"\x00not a pdf body" * 40
    (ws / "broken.pdf").write_bytes(broken)
    with pytest.raises(ToolError, match="could not convert broken.pdf: could not read the PDF: "):
        read(ws, "broken.pdf")
    tool = ScrapeTool(ws, Settings(scrape_allow_private=True, scrape_timeout=2.0))
    with LoopbackServer(routes({"/b.pdf": Response(body=broken, content_type="application/pdf")})) as server:
        out = tool.run(url=f"{server.url}/b.pdf")
    assert isinstance(out, str)
    assert out.startswith(f"Error: could not scrape {server.url}/b.pdf: could not read the PDF: ")


def test_scrape_of_an_image_points_to_look_with_the_url(tmp_path: Path) -> None:
    tool = ScrapeTool(tmp_path / "ws", Settings(scrape_allow_private=True, scrape_timeout=2.0))
    with LoopbackServer(routes({"/p/cat": Response(body=fx.png_bytes(), content_type="image/png")})) as server:
        out = tool.run(url=f"{server.url}/p/cat")
    assert isinstance(out, ToolOutput)
    assert "It is a binary file (PNG image" in out.text and f"look(path='{server.url}/p/cat'" in out.text


def test_cell_fill_colours_are_listed_by_colour(ws: Path) -> None:
    from openpyxl import Workbook
    from openpyxl.styles import PatternFill

    book = Workbook()
    sheet = book.active
    sheet.title = "Plots"
    for row in range(1, 4):
        for col in range(1, 4):
            sheet.cell(row, col, value=row * col)
    for coordinate in ("A1", "C2", "B3"):
        sheet[coordinate].fill = PatternFill("solid", fgColor="00B050")
    sheet["A3"].fill = PatternFill("solid", fgColor="FFFF00")
    buffer = io.BytesIO()
    book.save(buffer)
    (ws / "plots.xlsx").write_bytes(buffer.getvalue())
    out = read(ws, "plots.xlsx")
    assert "Cells filled #00B050 (green): A1, C2, B3" in out and "Cells filled #FFFF00 (yellow): A3" in out
    (ws / "plain.xlsx").write_bytes(fx.xlsx_bytes(MARK))
    assert "Cells filled" not in read(ws, "plain.xlsx")
