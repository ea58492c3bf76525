"""What a file is, from its content first (magic bytes, ZIP members) and its name second."""

from __future__ import annotations

import io
import zipfile
from pathlib import PurePosixPath

from tools.documents.errors import ConversionError

# (magic, offset, format key, human name); checked in order, the first match wins.
_MAGIC: list[tuple[bytes, int, str, str]] = [
    (b"%PDF-", 0, "pdf", "PDF document"),
    (b"\x89PNG\r\n\x1a\n", 0, "png", "PNG image"),
    (b"\xff\xd8\xff", 0, "jpeg", "JPEG image"),
    (b"GIF87a", 0, "gif", "GIF image"),
    (b"GIF89a", 0, "gif", "GIF image"),
    (b"WEBP", 8, "webp", "WebP image"),
    (b"WAVE", 8, "wav", "WAV audio"),
    (b"AVI ", 8, "avi", "AVI video"),
    (b"fLaC", 0, "flac", "FLAC audio"),
    (b"OggS", 0, "ogg", "Ogg audio"),
    (b"ID3", 0, "mp3", "MP3 audio"),
    (b"\xff\xfb", 0, "mp3", "MP3 audio"),
    (b"\xff\xf3", 0, "mp3", "MP3 audio"),
    (b"\xff\xf2", 0, "mp3", "MP3 audio"),
    (b"ftypM4A", 4, "m4a", "M4A audio"),
    (b"ftyp", 4, "mp4", "MP4 video"),
    (b"\x1aE\xdf\xa3", 0, "webm", "WebM/Matroska video"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 0, "ole", "Microsoft Office 97-2003 file"),
    (b"PK\x03\x04", 0, "zip", "ZIP archive"),
    (b"PK\x05\x06", 0, "zip", "ZIP archive (empty)"),
    (b"\x1f\x8b", 0, "gzip", "gzip archive"),
    (b"BZh", 0, "bzip2", "bzip2 archive"),
    (b"\xfd7zXZ\x00", 0, "xz", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", 0, "7z", "7-Zip archive"),
    (b"Rar!\x1a\x07", 0, "rar", "RAR archive"),
    (b"SQLite format 3\x00", 0, "sqlite", "SQLite database"),
    (b"PAR1", 0, "parquet", "Parquet file"),
    (b"\x93NUMPY", 0, "npy", "NumPy array"),
    (b"\x7fELF", 0, "elf", "ELF executable"),
    (b"MZ", 0, "exe", "Windows executable"),
    (b"BM", 0, "bmp", "BMP image"),
    (b"II*\x00", 0, "tiff", "TIFF image"),
    (b"MM\x00*", 0, "tiff", "TIFF image"),
]

NAMES = {
    "docx": "Word document", "pptx": "PowerPoint presentation", "xlsx": "Excel workbook",
    "xls": "Excel 97-2003 workbook", "ods": "OpenDocument spreadsheet", "epub": "EPUB book",
    "csv": "CSV table", "tsv": "TSV table", "html": "HTML page", "json": "JSON", "xml": "XML",
    "pdf": "PDF document", "zip": "ZIP archive",
}
IMAGES = frozenset({"png", "jpeg", "gif", "webp", "bmp", "tiff"})
AUDIO = frozenset({"mp3", "wav", "flac", "ogg", "m4a", "webm", "mp4"})
_TEXT_SUFFIXES = {".csv": "csv", ".tsv": "tsv", ".html": "html", ".htm": "html", ".xhtml": "html",
                  ".json": "json", ".xml": "xml"}
_OLE_SUFFIXES = {".xls": "xls", ".doc": "doc", ".ppt": "ppt", ".msg": "msg"}
_ODF = {"application/vnd.oasis.opendocument.spreadsheet": "ods", "application/epub+zip": "epub"}
# Refuse archives that would expand beyond this: a small ZIP can hold gigabytes of zeros.
MAX_DIRECTORY_BYTES = 16_000_000  # about 250,000 entries: more is not opened (zipfile holds an object per entry)
MAX_UNPACKED = 400_000_000


def sniff(name: str, head: bytes) -> tuple[str, str] | None:
    """(format key, human name) from magic bytes, or None when the content looks like text."""
    for magic, offset, key, human in _MAGIC:
        if head[offset:offset + len(magic)] == magic:
            if key in ("wav", "webp", "avi") and not head.startswith(b"RIFF"):
                continue
            if key in ("exe", "bmp") and b"\x00" not in head[:64]:
                continue  # two letters are not enough: "BMW ..." is a text file
            return key, human
    if b"\x00" in head[:8192]:
        return "binary", "binary data"
    return None


def looks_like_html(head: bytes) -> bool:
    """True when a file's first bytes start an HTML document, whatever its name says."""
    return head[:512].lstrip().lower().startswith((b"<!doctype html", b"<html"))


def text_format(name: str) -> str | None:
    """The text format ('csv', 'html', 'json', ...) a text file's extension names, if any."""
    return _TEXT_SUFFIXES.get(PurePosixPath(name).suffix.lower())


def zip_directory_size(data: bytes) -> int:
    """The size in bytes of a ZIP archive's central directory as its end record says (ZIP64's where it has one),
    read as zipfile reads it; 0 without an end record. zipfile makes an object of every entry of it (a 95 MB
    directory of empty entries took 931 MB): checked before an archive is opened."""
    end = data.rfind(b"PK\x05\x06", max(0, len(data) - 65_557))
    if end < 0 or len(data) < end + 22:
        return 0
    size = int.from_bytes(data[end + 12:end + 16], "little")
    locator = end - 20  # ZIP64: its locator just before the end record, its own end record just before that
    if locator >= 56 and data[locator:locator + 4] == b"PK\x06\x07" and data[locator - 56:locator - 52] == \
            b"PK\x06\x06":
        size = int.from_bytes(data[locator - 16:locator - 8], "little")
    return size


def check_directory(data: bytes) -> None:
    """ConversionError naming the limit when an archive's central directory is over MAX_DIRECTORY_BYTES."""
    size = zip_directory_size(data)
    if size > MAX_DIRECTORY_BYTES:
        raise ConversionError(f"the archive's directory of members is {size / 1e6:,.0f} MB, more than the "
                              f"{MAX_DIRECTORY_BYTES // 1_000_000} MB read here (a ZIP bomb?); not read. Open it with "
                              "the python tool if you trust it")


def zip_format(data: bytes) -> str:
    """'docx', 'pptx', 'xlsx', 'ods', 'epub' or plain 'zip', from the archive's members."""
    if zip_directory_size(data) > MAX_DIRECTORY_BYTES:
        return "zip"  # not opened: listing it says why
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = set(archive.namelist())
            mimetype = ""
            if "mimetype" in names:
                with archive.open("mimetype") as handle:
                    mimetype = handle.read(200).decode("ascii", "replace").strip()
    except (zipfile.BadZipFile, OSError, KeyError):
        return "zip"
    if mimetype in _ODF:
        return _ODF[mimetype]
    for member, key in (("word/document.xml", "docx"), ("ppt/presentation.xml", "pptx"),
                        ("xl/workbook.xml", "xlsx")):
        if member in names:
            return key
    return "zip"


def ole_format(name: str) -> str:
    """What an OLE2 (Office 97-2003) file is, from its extension; 'xls' when unsure."""
    return _OLE_SUFFIXES.get(PurePosixPath(name).suffix.lower(), "xls")


def unpacked_size(archive: zipfile.ZipFile) -> int:
    """The total uncompressed size the archive claims."""
    return sum(info.file_size for info in archive.infolist())


def check_unpacked(archive: zipfile.ZipFile, what: str) -> None:
    """ConversionError when the archive (a `what`: file, workbook, book...) claims more than MAX_UNPACKED."""
    if unpacked_size(archive) > MAX_UNPACKED:
        raise ConversionError(f"the {what} expands to more than 400 MB; open it with the python tool")


_IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"}
_AUDIO_SUFFIXES = {".mp3", ".wav", ".m4a", ".ogg", ".oga", ".opus", ".flac", ".aac"}


def attachment_hint(name: str) -> str:
    """Which tool opens an attached file, for the task prompt (look for images, transcribe for audio)."""
    suffix = PurePosixPath(name).suffix.lower()
    if suffix in _IMAGE_SUFFIXES:
        return f"see it with look(path='{name}', question=...)"
    if suffix in _AUDIO_SUFFIXES:
        return f"hear it with transcribe(path='{name}')"
    return "open it with read_file (documents are shown as Markdown) or python"
