"""Documents that expand when converted (issue 52's bombs), made by code: tests and benchmarks/document_bombs.py.

- `ods_bomb`: about 1 KB of ODS whose repeat attributes multiply: a row repeated `rows` times holding `cells`
  cells, each repeated over `cols` columns (1,000 x 1,000 x 1,000 took 1.7 GB and 58 s, and more, in the agent).
- `docx_bomb`: a Word file of about 36 KB with one table cell spanning `span` grid columns (gridSpan="100000000"
  did the same through python-docx, which lists the cell once per column).
- `slow_pdf`: a small PDF whose `pages` pages all draw one shared content stream of `stream_bytes` bytes of text
  operators (compressed to little): pypdf reads the whole stream again for every page (seconds a page).
"""

from __future__ import annotations

import io
import zipfile
import zlib

from tests.fakes.documents import pdf_file

_ODS_NS = ('xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
           'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
           'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"')


def ods_bomb(cells: int = 1_000, cols: int = 1_000, rows: int = 1_000) -> bytes:
    """An ODS whose one sheet is `rows` x (`cells` x `cols`) numbers once its repeats are expanded."""
    cell = f'<table:table-cell table:number-columns-repeated="{cols}" office:value-type="float" office:value="1"/>'
    content = (f'<?xml version="1.0" encoding="UTF-8"?><office:document-content {_ODS_NS}><office:body>'
               f'<office:spreadsheet><table:table table:name="Bomb"><table:table-row table:number-rows-repeated='
               f'"{rows}">{cell * cells}</table:table-row></table:table></office:spreadsheet></office:body>'
               '</office:document-content>')
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        archive.writestr("mimetype", "application/vnd.oasis.opendocument.spreadsheet", compress_type=zipfile.ZIP_STORED)
        archive.writestr("content.xml", content)
    return buffer.getvalue()


def docx_bomb(span: int = 100_000_000) -> bytes:
    """A Word file whose one table cell spans `span` grid columns (w:gridSpan)."""
    import docx
    from docx.oxml import OxmlElement
    from docx.oxml.ns import qn

    document = docx.Document()
    document.add_paragraph("A table follows.")
    cell = document.add_table(rows=1, cols=1).rows[0].cells[0]
    grid_span = OxmlElement("w:gridSpan")
    grid_span.set(qn("w:val"), str(span))
    cell._tc.get_or_add_tcPr().append(grid_span)
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def slow_pdf(pages: int = 1_000, stream_bytes: int = 500_000) -> bytes:
    """A PDF of `pages` pages that share one FlateDecode content stream of `stream_bytes` bytes of text operators."""
    operator = b"BT /F1 1 Tf (x) Tj ET\n"
    stream = zlib.compress(operator * (stream_bytes // len(operator)), 9)
    kids = " ".join(f"{5 + i} 0 R" for i in range(pages)).encode()
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> "
            b"/Contents 3 0 R >>")
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [%s] /Count %d >>" % (kids, pages),
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n%s\nendstream" % (len(stream), stream),
               b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>", *[page] * pages]
    return pdf_file(objects)
