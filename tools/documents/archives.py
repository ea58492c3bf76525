"""ZIP archives (a listing; members read on request) and EPUB books (chapters in reading order)."""

from __future__ import annotations

import io
import posixpath
import zipfile
from typing import Any

from tools.documents.detect import MAX_UNPACKED, check_directory, check_unpacked, unpacked_size
from tools.documents.errors import ConversionError
from tools.documents.text import html_markdown

MAX_MEMBER_BYTES = 100_000_000
MAX_LISTED = 500


def zip_listing(data: bytes, name: str) -> str:
    """The members of a ZIP archive with their sizes, and how to read one."""
    with _open(data) as archive:
        infos = [i for i in archive.infolist() if not i.is_dir()]
    lines = [f"ZIP archive with {len(infos)} file(s), {sum(i.file_size for i in infos):,} bytes unpacked:"]
    lines += [f"- {i.filename}  ({i.file_size:,} bytes)" for i in infos[:MAX_LISTED]]
    if len(infos) > MAX_LISTED:
        lines.append(f"[{len(infos) - MAX_LISTED:,} more not listed]")
    example = infos[0].filename if infos else "member.txt"
    lines.append(f"\nRead a member with read_file(path='{name}/{example}'), or unpack the archive with the "
                 "python tool (zipfile).")
    return "\n".join(lines)


def zip_member(data: bytes, member: str) -> bytes:
    """The bytes of one archive member; ConversionError naming the members when it is not there."""
    with _open(data) as archive:
        names = {i.filename.rstrip("/"): i for i in archive.infolist() if not i.is_dir()}
        info = names.get(member.strip("/"))
        if info is None:
            close = [n for n in names if posixpath.basename(n) == posixpath.basename(member)]
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ConversionError(f"the archive has no member {member!r}.{hint} Read the archive itself for "
                                  "the list of its members.")
        if info.file_size > MAX_MEMBER_BYTES:
            raise ConversionError(f"{member} is {info.file_size:,} bytes unpacked; extract it with the python tool")
        if info.flag_bits & 0x1:
            raise ConversionError(f"{member} is encrypted; extract it with the python tool and the password")
        with archive.open(info) as fh:
            return fh.read(MAX_MEMBER_BYTES + 1)[:MAX_MEMBER_BYTES]


def _open(data: bytes) -> zipfile.ZipFile:
    check_directory(data)
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise ConversionError(f"not a readable ZIP archive ({exc})") from exc
    if unpacked_size(archive) > MAX_UNPACKED * 10:
        archive.close()
        raise ConversionError("the archive claims an absurd unpacked size (a ZIP bomb?); not read")
    return archive


def epub_markdown(data: bytes) -> str:
    """An EPUB's title and chapters in spine order, each chapter's XHTML turned into Markdown."""
    with _open(data) as archive:
        check_unpacked(archive, "book")
        opf_path = _opf_path(archive)
        opf = _xml(archive.read(opf_path))
        base = posixpath.dirname(opf_path)
        ns = {"opf": "http://www.idpf.org/2007/opf", "dc": "http://purl.org/dc/elements/1.1/"}
        manifest = {item.get("id"): item.get("href") for item in opf.iterfind(".//opf:manifest/opf:item", ns)}
        title = " ".join(t.text or "" for t in opf.iterfind(".//dc:title", ns)).strip()
        chapters = []
        for ref in opf.iterfind(".//opf:spine/opf:itemref", ns):
            href = manifest.get(ref.get("idref"))
            if not href:
                continue
            path = posixpath.normpath(posixpath.join(base, href.split("#")[0]))
            try:
                html = archive.read(path).decode("utf-8", errors="replace")
            except KeyError:
                continue
            text = html_markdown(html, recall=True)
            if text.strip():
                chapters.append(f"## {posixpath.basename(path)}\n\n{text}")
    head = f"# {title}\n\n" if title else ""
    return head + "\n\n".join(chapters)


def _opf_path(archive: zipfile.ZipFile) -> str:
    try:
        container = _xml(archive.read("META-INF/container.xml"))
    except KeyError as exc:
        raise ConversionError("not a valid EPUB (no META-INF/container.xml)") from exc
    ns = {"c": "urn:oasis:names:tc:opendocument:xmlns:container"}
    rootfile = container.find(".//c:rootfile", ns)
    if rootfile is None or not rootfile.get("full-path"):
        raise ConversionError("not a valid EPUB (container.xml names no package file)")
    return str(rootfile.get("full-path"))


def _xml(data: bytes) -> Any:
    from lxml import etree

    parser = etree.XMLParser(resolve_entities=False, no_network=True, recover=True)
    return etree.fromstring(data, parser)
