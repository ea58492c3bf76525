"""Documents that expand when converted (issue 52's bombs), made by code: tests and benchmarks/document_bombs.py.

- `ods_bomb`: about 1 KB of ODS whose repeat attributes multiply: a row repeated `rows` times holding `cells`
  cells, each repeated over `cols` columns (1,000 x 1,000 x 1,000 took 1.7 GB and 58 s, and more, in the agent).
- `docx_bomb`: a Word file of about 36 KB with one table cell spanning `span` grid columns (gridSpan="100000000"
  did the same through python-docx, which lists the cell once per column).
- `slow_pdf`: a small PDF whose `pages` pages all draw one shared content stream of `stream_bytes` bytes of text
  operators (compressed to little): pypdf reads the whole stream again for every page (seconds a page).

Issue 58's, for the parsers that ran in the agent besides documents (look's images, archive listings):
- `png_bomb`: a PNG of about 518 KB declaring `side` x `side` RGB pixels, all black (13,000 x 13,000 took the
  agent to 1,362 MB in look's decoding and downscaling).
- `pdf_image_bomb`: a one-page PDF of about 80 KB whose page names one large image `names` times (look's page
  image read every name anew: 32 s of CPU for 100).
- `zip_directory_bomb`: a ZIP of only a central directory, `entries` members of no data (1,700,000 make 95 MB,
  which took 931 MB and 13 s to list in the agent). ZIP64, as more than 65,535 entries need.
"""

from __future__ import annotations

import io
import struct
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


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb(side: int = 13_000) -> bytes:
    """A black RGB PNG of `side` x `side` pixels (about 500 KB at 13,000), made in a fraction of a second: a block
    of rows compressed once after a full flush compresses to the same bytes every time, so it is repeated."""
    row = b"\x00" * (1 + 3 * side)  # filter byte "none", then the row's pixels
    rows = 64
    pack = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = pack.compress(row * rows) + pack.flush(zlib.Z_FULL_FLUSH)
    checksum = 1
    for _ in range(side // rows):
        checksum = zlib.adler32(row * rows, checksum)
    tail = zlib.compressobj(9, zlib.DEFLATED, -15)
    rest = tail.compress(row * (side % rows)) + tail.flush()
    checksum = zlib.adler32(row * (side % rows), checksum)
    data = b"\x78\xda" + block * (side // rows) + rest + struct.pack(">I", checksum)
    header = struct.pack(">IIBBBBB", side, side, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + _png_chunk(b"IHDR", header) + _png_chunk(b"IDAT", data)
            + _png_chunk(b"IEND", b""))


def pdf_image_bomb(names: int = 100, side: int = 5_000) -> bytes:
    """A one-page PDF whose page's resources name one `side` x `side` grey image `names` times."""
    pack = zlib.compressobj(9)
    row = b"\x80" * side
    stream = b"".join(pack.compress(row) for _ in range(side)) + pack.flush()
    image = (b"<< /Type /XObject /Subtype /Image /Width %d /Height %d /ColorSpace /DeviceGray "
             b"/BitsPerComponent 8 /Filter /FlateDecode /Length %d >>\nstream\n%s\nendstream"
             % (side, side, len(stream), stream))
    xobjects = b" ".join(b"/Im%d 5 0 R" % i for i in range(names))
    draw = b"q 612 0 0 792 0 0 cm /Im0 Do Q"
    page = (b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /XObject << %s >> >> "
            b"/Contents 4 0 R >>" % xobjects)
    return pdf_file([b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>", page,
                     b"<< /Length %d >>\nstream\n%s\nendstream" % (len(draw), draw), image])


def zip_directory_bomb(entries: int = 1_700_000) -> bytes:
    """A ZIP64 archive of one empty stored member (its local header first, as a ZIP file begins) named `entries`
    times over in its central directory, and nothing else."""
    local = struct.pack("<IHHHHHIIIHH", 0x04034B50, 20, 0, 0, 0, 0, 0, 0, 0, 10, 0) + b"m000000000"
    entry = struct.pack("<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0)
    directory = b"".join(b"%sm%09d" % (entry, i) for i in range(entries))
    size, count, start = len(directory), entries, len(local)
    end64 = struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0, count, count, size, start)
    locator = struct.pack("<IIQI", 0x07064B50, 0, start + size, 1)
    end = struct.pack("<IHHHHIIH", 0x06054B50, 0, 0, 0xFFFF, 0xFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0)
    return local + directory + end64 + locator + end
