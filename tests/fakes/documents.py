"""Document fixtures written with the format libraries themselves, each carrying a caller's marker string."""

from __future__ import annotations

import io
import math
import struct
import wave
import zipfile
import zlib
from pathlib import Path


def docx_bytes(marker: str) -> bytes:
    """A Word file: a heading, a paragraph with the marker, a list item, and a table with a merged cell."""
    import docx

    document = docx.Document()
    document.add_heading("Quarterly notes", level=1)
    document.add_paragraph(f"The secret word is {marker}.")
    document.add_paragraph("first point", style="List Bullet")
    table = document.add_table(rows=2, cols=3)
    merged = table.cell(0, 0).merge(table.cell(0, 1))
    merged.text = "Merged header"
    table.cell(0, 2).text = "Total"
    for col, value in enumerate(("a", "b", "42")):
        table.cell(1, col).text = value
    return _save(document)


def pptx_bytes(marker: str) -> bytes:
    """A deck of two slides: titles, a bullet, and speaker notes holding the marker on slide 2."""
    from pptx import Presentation
    from pptx.util import Inches

    deck = Presentation()
    for number, (title, body) in enumerate((("Intro", "Welcome everyone"), ("Results", "Revenue grew"))):
        slide = deck.slides.add_slide(deck.slide_layouts[1])
        slide.shapes.title.text = title
        slide.placeholders[1].text = body
        if number == 1:
            slide.notes_slide.notes_text_frame.text = f"Remember to mention {marker}"
            slide.shapes.add_picture(io.BytesIO(png_bytes()), Inches(1), Inches(4))
    return _save(deck)


def xlsx_bytes(marker: str, values: list[int] | None = None) -> bytes:
    """A workbook: sheet 'Sales' with a header, numbers, a merged title and a SUM formula; sheet 'Notes'."""
    from openpyxl import Workbook

    book = Workbook()
    sales = book.active
    sales.title = "Sales"
    sales.append(["Region", "Units"])
    for i, value in enumerate(values or [10, 20, 30], start=1):
        sales.append([f"R{i}", value])
    sales["D1"] = "Quarter report"
    sales.merge_cells("D1:E1")
    sales["C2"] = "=SUM(B2:B4)"
    notes = book.create_sheet("Notes")
    notes["A1"] = marker
    return _save(book)


def xls_bytes(marker: str) -> bytes:
    """An Excel 97-2003 workbook (written with xlwt) with the marker in a cell."""
    import xlwt

    book = xlwt.Workbook()
    sheet = book.add_sheet("Legacy")
    sheet.write(0, 0, "Name")
    sheet.write(0, 1, "Value")
    sheet.write(1, 0, marker)
    sheet.write(1, 1, 3.5)
    buffer = io.BytesIO()
    book.save(buffer)
    return buffer.getvalue()


def ods_bytes(marker: str) -> bytes:
    """A minimal OpenDocument spreadsheet (content.xml written by hand, as the format defines it)."""
    content = f"""<?xml version="1.0" encoding="UTF-8"?>
<office:document-content xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" office:version="1.2">
<office:body><office:spreadsheet><table:table table:name="Planets">
<table:table-row><table:table-cell office:value-type="string"><text:p>Name</text:p></table:table-cell>
<table:table-cell office:value-type="string"><text:p>Moons</text:p></table:table-cell></table:table-row>
<table:table-row><table:table-cell office:value-type="string"><text:p>{marker}</text:p></table:table-cell>
<table:table-cell office:value-type="float" office:value="79"><text:p>79</text:p></table:table-cell>
</table:table-row>
<table:table-row table:number-rows-repeated="1048570"><table:table-cell table:number-columns-repeated="1024"/>
</table:table-row></table:table></office:spreadsheet></office:body></office:document-content>"""
    return _zip({"mimetype": "application/vnd.oasis.opendocument.spreadsheet", "content.xml": content})


def epub_bytes(marker: str) -> bytes:
    """A two-chapter EPUB whose second chapter holds the marker."""
    chapter = ("<?xml version='1.0' encoding='utf-8'?><html xmlns='http://www.w3.org/1999/xhtml'><head>"
               "<title>{t}</title></head><body><h1>{t}</h1><p>{p}</p></body></html>")
    opf = """<?xml version='1.0' encoding='utf-8'?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Test Book</dc:title></metadata>
<manifest><item id="c1" href="c1.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="c2.xhtml" media-type="application/xhtml+xml"/></manifest>
<spine><itemref idref="c1"/><itemref idref="c2"/></spine></package>"""
    container = """<?xml version="1.0"?><container version="1.0"
 xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>
<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>"""
    return _zip({"mimetype": "application/epub+zip", "META-INF/container.xml": container,
                 "OEBPS/content.opf": opf,
                 "OEBPS/c1.xhtml": chapter.format(t="Chapter One", p="It begins on a quiet morning."),
                 "OEBPS/c2.xhtml": chapter.format(t="Chapter Two", p=f"The butler was {marker}.")})


def zip_bytes(members: dict[str, bytes | str]) -> bytes:
    """A ZIP archive of these members."""
    return _zip(members)


def png_bytes(width: int = 4, height: int = 3) -> bytes:
    """A small red PNG written with zlib and struct (no imaging library needed)."""
    raw = b"".join(b"\x00" + b"\xff\x00\x00" * width for _ in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def wav_bytes(seconds: float = 1.0, rate: int = 8000) -> bytes:
    """A mono 16-bit sine tone written with the standard library's wave module."""
    frames = b"".join(struct.pack("<h", int(8000 * math.sin(2 * math.pi * 440 * i / rate)))
                      for i in range(int(seconds * rate)))
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(frames)
    return buffer.getvalue()


def text_pdf_bytes(marker: str) -> bytes:
    """A one-page PDF whose text layer holds the marker (objects and xref table written by hand)."""
    stream = f"BT /F1 18 Tf 72 720 Td ({marker}) Tj ET".encode()
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                 b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 5 0 R >> >>"
                 b" /Contents 4 0 R >>",
                 b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
                 b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"])


def pages_pdf_bytes(pages: list[list[str]], labels: str = "") -> bytes:
    """A PDF with one page per entry, each line of it a line of the page's text layer (Helvetica, 11 pt); `labels`
    the catalog's /PageLabels number tree (`/Nums [0 << /S /r >> 3 << /S /D >>]`: i-iii, then 1, 2, ...)."""
    count = len(pages)
    kids = " ".join(f"{3 + 2 * i} 0 R" for i in range(count))
    page_labels = f" /PageLabels << {labels} >>".encode() if labels else b""
    objects = [b"<< /Type /Catalog /Pages 2 0 R%s >>" % page_labels,
               b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids.encode(), count)]
    font = 3 + 2 * count
    for lines in pages:
        escaped = [line.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)") for line in lines]
        body = "BT /F1 11 Tf 14 TL 56 760 Td " + " ".join(f"({line}) Tj T*" for line in escaped) + " ET"
        stream = body.encode("latin-1", "replace")
        objects.append(b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >>"
                       b" /Contents %d 0 R >>" % (font, len(objects) + 2))
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    objects.append(b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>")
    return pdf_file(objects)


def scanned_pdf_bytes() -> bytes:
    """A one-page PDF with no text layer (only a drawn rectangle), like a scan."""
    stream = b"0 0 1 rg 100 100 200 200 re f"
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>",
                 b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
                 b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
                 b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream)])


def write_all(folder: Path, marker: str) -> dict[str, Path]:
    """Every fixture written into folder, by format name."""
    makers = {"docx": docx_bytes, "pptx": pptx_bytes, "xlsx": xlsx_bytes, "xls": xls_bytes, "ods": ods_bytes,
              "epub": epub_bytes, "pdf": text_pdf_bytes}
    paths = {}
    for ext, make in makers.items():
        paths[ext] = folder / f"sample.{ext}"
        paths[ext].write_bytes(make(marker))
    paths["csv"] = folder / "sample.csv"
    paths["csv"].write_text(f"city,population\n{marker},1200\nOslo,700000\n", encoding="utf-8")
    paths["html"] = folder / "sample.html"
    paths["html"].write_text(f"<html><head><title>T</title></head><body><article><h1>Report</h1><p>"
                             f"{'The annual report says many things. ' * 20}Key: {marker}.</p></article></body>"
                             "</html>", encoding="utf-8")
    paths["zip"] = folder / "sample.zip"
    paths["zip"].write_bytes(zip_bytes({"inner/readme.txt": f"plain {marker}", "report.docx": docx_bytes(marker)}))
    return paths


def _save(document: object) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)  # type: ignore[attr-defined]
    return buffer.getvalue()


def _zip(members: dict[str, bytes | str]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            compress = zipfile.ZIP_STORED if name == "mimetype" else zipfile.ZIP_DEFLATED
            archive.writestr(name, data, compress_type=compress)
    return buffer.getvalue()


def pdf_file(objects: list[bytes]) -> bytes:
    """A PDF of these objects (numbered from 1, the first the catalog) with its cross-reference table."""
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
