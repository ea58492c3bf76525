"""Build the held-out labelled sets that `benchmarks/extraction.py --heldout DIR` scores, from local clones.

Nothing is downloaded: clone the public repositories first (a normal clone or a bare one both work):

    git clone https://github.com/j-szulc/html-cleaning-dataset-merged   # CleanEval, CleanPortalEval, Dragnet, L3S-GN1
    git clone https://github.com/mozilla/readability                   # Readability's test pages
    git clone https://github.com/tiptopjaw/web-content-extraction-benchmark   # 2025 article pages

then run

    python benchmarks/extraction_sets.py --out DIR [--cleaning PATH] [--readability PATH] [--wceb PATH]
    python benchmarks/extraction.py --heldout DIR

Each set is written as DIR/<set>/ground-truth.json ({id: {"articleBody": text, "url": url}}),
DIR/<set>/html/<id>.html.gz (the page as UTF-8 HTML, gzip) and DIR/<set>/SOURCE.txt (repository, commit,
conversion rules). A bare git directory is read at HEAD through `git cat-file`; a work tree is read as files.
"""

from __future__ import annotations

import argparse
import gzip
import html
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import charset_normalizer
from lxml import html as lxml_html

Page = tuple[str, str, str, str]  # id, articleBody, url, page HTML


class Source:
    """The files of one repository: a work tree read from disk, or a bare git directory read at HEAD."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.bare = (root / "objects").is_dir() and (root / "HEAD").is_file()
        self._batch: subprocess.Popen[bytes] | None = None

    def read(self, path: str) -> bytes | None:
        """The bytes of a file at `path` (relative to the repository root), None when it does not exist."""
        if not self.bare:
            file = self.root / path
            return file.read_bytes() if file.is_file() else None
        if self._batch is None:
            self._batch = subprocess.Popen(["git", "-C", str(self.root), "cat-file", "--batch"],
                                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert self._batch.stdin is not None and self._batch.stdout is not None
        self._batch.stdin.write(f"HEAD:{path}\n".encode())
        self._batch.stdin.flush()
        header = self._batch.stdout.readline().split()
        if len(header) != 3 or header[1] != b"blob":
            return None
        data = self._batch.stdout.read(int(header[2]) + 1)
        return data[:-1]

    def names(self, folder: str) -> list[str]:
        """Entry names inside `folder`, in git's tree order (a folder sorts as if its name ended in '/')."""
        if self.bare:
            listing = subprocess.run(["git", "-C", str(self.root), "ls-tree", "-z", "HEAD", folder.rstrip("/") + "/"],
                                     capture_output=True, check=True).stdout.decode()
            return [entry.split("\t", 1)[1].rsplit("/", 1)[-1] for entry in listing.split("\0") if entry]
        base = self.root / folder
        entries = [(p.name + "/" if p.is_dir() else p.name, p.name) for p in base.iterdir()] if base.is_dir() else []
        return [name for _key, name in sorted(entries)]

    def commit(self) -> str:
        """The HEAD commit, or "unknown" when the folder is not a git checkout."""
        if not (self.bare or (self.root / ".git").exists()):
            return "unknown"
        try:
            done = subprocess.run(["git", "-C", str(self.root), "rev-parse", "HEAD"], capture_output=True, text=True)
        except OSError:  # no git binary: a work tree still converts, only the commit is not named
            return "unknown"
        return done.stdout.strip() if done.returncode == 0 else "unknown"

    def close(self) -> None:
        """Stop the `git cat-file` reader, if one was started."""
        if self._batch is not None:
            self._batch.communicate()
            self._batch = None


_META = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?([\w-]+)""", re.I)


def decode(data: bytes) -> str:
    """Text of a page or label file: UTF-8, else the charset its <meta> names, else a detected one."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    found = _META.search(data[:4000])
    if found:
        try:
            return data.decode(found.group(1).decode(), errors="replace")
        except LookupError:
            pass
    best = charset_normalizer.from_bytes(data).best()
    return str(best) if best else data.decode("cp1252", errors="replace")


def cleaneval_truth(text: str) -> tuple[str, str]:
    """CleanEval gold text and URL: URL line dropped, <p>/<h>/<l> markers become line breaks, lynx's <hr> dropped."""
    url = ""
    found = re.search(r"^\s*URL: *(\S+)", text)
    if found:
        url, text = found.group(1), text[found.end():]
    text = re.sub(r"<(?:p|h|l)>", "\n", text)
    text = re.sub(r"^\s*_{3,}\s*$", "", text, flags=re.M)  # lynx's rendering of <hr>, not page text
    return html.unescape(text).strip(), url


def dragnet_truth(text: str) -> tuple[str, str]:
    """Dragnet gold text without the user comments after the '!@#$%^&*() COMMENTS' separator."""
    return re.split(r"^!+@#\$%\^&\*\(\).*$", text, maxsplit=1, flags=re.M)[0].strip(), ""


_L3S_BLOCKS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "td", "tr", "br", "ul", "ol", "table",
               "blockquote", "pre", "dd", "dt", "section", "article"}
_L3S_LABELS = " or ".join(f'contains(@class, "x-nc-sel{n}")' for n in (1, 2, 3))


def l3s_truth(text: str) -> tuple[str, str]:
    """L3S-GN1 gold text: the leaf spans labelled x-nc-sel1..3 (headline, full text, supplemental)."""
    parts: list[str] = []
    for span in lxml_html.fromstring(text).xpath(f"//span[{_L3S_LABELS}]"):
        if span.xpath('.//span[contains(@class, "x-nc-sel")]'):
            continue  # only leaves, so nested labels are not counted twice
        parent = span.getparent()
        parts.append(("\n" if parent is not None and parent.tag in _L3S_BLOCKS else " ") + span.text_content().strip())
    return "".join(parts).strip(), ""


# Frozen copy of tools/documents/extraction_choice.py's block_text rules: the labels do not move when the rules do.
_BLOCKS = {"p", "div", "li", "h1", "h2", "h3", "h4", "h5", "h6", "pre", "blockquote", "tr", "br", "section",
           "article", "table", "ul", "ol", "dd", "dt", "figcaption"}


def block_text(markup: str) -> str:
    """Text of an HTML fragment with a line break after every block element (Readability's expected.html)."""
    tree = lxml_html.fromstring(markup)
    for el in tree.iter():
        if isinstance(el.tag, str) and el.tag in _BLOCKS:
            el.tail = "\n" + el.tail if el.tail else "\n"
    return str(tree.text_content())


_TEXT_TAG = re.compile(r'\s*<text id="([^"]*)"[^>]*>\s*')
_TEXT_END = re.compile(r"\s*</text>\s*$")
# set name -> (folder in html-cleaning-dataset-merged, id prefix), reader of the gold file
CLEANING = {
    "cleaneval": ([("cleaneval-dev", "dev"), ("cleaneval-final", "final")], cleaneval_truth),
    "cleanportaleval": ([("CleanPortalEval-master", "master")], cleaneval_truth),
    "dragnet": ([("dragnet_data", "dragnet_data")], dragnet_truth),
    "l3s-gn1": ([("page-signal-master", "page")], l3s_truth),
}


def cleaning_pages(source: Source, name: str) -> Iterator[Page]:
    """Pages of one set of html-cleaning-dataset-merged: each GoldStandard/N.txt with its input/N.html."""
    folders, reader = CLEANING[name]
    for folder, prefix in folders:
        for gold in source.names(f"{folder}/GoldStandard"):
            stem = gold.rsplit(".", 1)[0]
            raw = source.read(f"{folder}/input/{stem}.html") if gold != ".DS_Store" else None
            label = source.read(f"{folder}/GoldStandard/{gold}") if raw is not None else None
            if raw is None or label is None:
                continue
            body, url = reader(decode(label))
            if not body.strip():
                continue
            page = decode(raw)
            wrapper = _TEXT_TAG.match(page)  # CleanEval's <text id=URL ...> wrapper, dropped as WCEB does
            if wrapper:
                url = url or wrapper.group(1)
                page = _TEXT_END.sub("", page[wrapper.end():])
            yield f"{prefix}-{stem}"[:60], body, url, page


def readability_pages(source: Source) -> Iterator[Page]:
    """Readability's test pages: source.html with the block text of expected.html as the label."""
    for name in source.names("test/test-pages"):
        raw, expected = (source.read(f"test/test-pages/{name}/{f}") for f in ("source.html", "expected.html"))
        if raw is not None and expected is not None and expected.strip():
            yield name, block_text(expected.decode("utf-8")), "http://fakehost/test/page.html", decode(raw)


def wceb_pages(source: Source) -> Iterator[Page]:
    """The benchmark's article pages: benchmark/ground-truth/N.json main_content with release/html/N.html.gz."""
    for name in source.names("benchmark/ground-truth"):
        label = source.read(f"benchmark/ground-truth/{name}") if name.endswith(".json") else None
        if label is None:
            continue
        record = json.loads(label)
        if record.get("_internal", {}).get("page_type", {}).get("primary") != "article":
            continue
        page = source.read(f"release/html/{record['file_id']}.html.gz")
        if page is not None:
            body = record["ground_truth"]["main_content"]
            yield record["file_id"], body, record["url"], decode(gzip.decompress(page))


def write_set(out: Path, pages: Iterator[Page], note: str) -> int:
    """Write one set (ground-truth.json, html/ID.html.gz, SOURCE.txt) under `out`; return its page count."""
    truth: dict[str, dict[str, str]] = {}
    for page_id, body, url, page in pages:
        truth[page_id] = {"articleBody": body, "url": url}
        (out / "html").mkdir(parents=True, exist_ok=True)
        (out / "html" / f"{page_id}.html.gz").write_bytes(gzip.compress(page.encode("utf-8"), mtime=0))
    if truth:  # an empty set is left without ground-truth.json, so extraction.py does not score it
        (out / "ground-truth.json").write_text(json.dumps(truth, ensure_ascii=False, indent=0), encoding="utf-8")
        (out / "SOURCE.txt").write_text(note + "\n", encoding="utf-8")
    return len(truth)


_NOTES = {
    "cleaneval": "Human-labelled CleanEval (2007) dev + final gold standard, from {repo} cleaneval-dev/ + "
                 "cleaneval-final/ (GoldStandard/*.txt, input/*.html). URL line dropped, <p>/<h>/<l> markers become "
                 "line breaks, lines of only underscores (lynx's <hr>) dropped, HTML entities unescaped; the input "
                 "pages' <text id=URL> wrapper is removed (URL kept), as WCEB does; ids dev-N / final-N. CleanEval "
                 "annotators kept most visible text (not article-only).",
    "cleanportaleval": "Human-labelled CleanPortalEval (ppke-nlpg/CleanPortalEval) from {repo} "
                       "CleanPortalEval-master/, converted like cleaneval (HTML entities unescaped, <text> wrapper "
                       "removed); ids master-NAME.",
    "dragnet": "Human-labelled Dragnet 2012 data (seomoz/dragnet_data, HTML + Corrected) from {repo} dragnet_data/. "
               "The text after the '!@#$%^&*() COMMENTS' separator (user comments) is dropped, as in Dragnet's "
               "content-only task; ids dragnet_data-N.",
    "l3s-gn1": "Human-labelled L3S-GN1 (Kohlschuetter et al., WSDM 2010; boilerpipe's Google News set) from {repo} "
               "page-signal-master/ (= geodrome/page-signal). Truth = text of the leaf spans labelled x-nc-sel1/2/3 "
               "(headline, full text, supplemental), as the WCEB benchmark (chatnoir-eu/web-content-extraction-"
               "benchmark dataset_readers.py) reads it; ids page-UUID.",
    "readability": "{repo} test/test-pages/*/source.html (the page) + expected.html (Readability's own output; its "
                   "text with a line break after each block element is the label); url http://fakehost/test/page.html.",
    "modern-2025": "{repo} benchmark/ground-truth/*.json main_content (LLM-generated labels, pages whose page_type is "
                   "article only) + release/html/ID.html.gz.",
}


def _note(name: str, repo: str, source: Source) -> str:
    where = f"{repo} (snapshot {source.commit()})"
    return _NOTES[name].format(repo=where) + " Converted by benchmarks/extraction_sets.py."


def build(out: Path, cleaning: Path | None, readability: Path | None, wceb: Path | None) -> dict[str, int]:
    """Convert every set whose repository was given; return the page count of each set written."""
    counts: dict[str, int] = {}
    if cleaning:
        source = Source(cleaning)
        for name in CLEANING:
            note = _note(name, "j-szulc/html-cleaning-dataset-merged", source)
            counts[name] = write_set(out / name, cleaning_pages(source, name), note)
        source.close()
    if readability:
        source = Source(readability)
        note = _note("readability", "mozilla/readability", source)
        counts["readability"] = write_set(out / "readability", readability_pages(source), note)
        source.close()
    if wceb:
        source = Source(wceb)
        note = _note("modern-2025", "tiptopjaw/web-content-extraction-benchmark", source)
        counts["modern-2025"] = write_set(out / "modern-2025", wceb_pages(source), note)
        source.close()
    return counts


def main(argv: list[str] | None = None) -> int:
    """Parse the command line, convert the sets and print their page counts; exit 2 on a bad path."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--out", type=Path, required=True, help="folder to write the sets into")
    parser.add_argument("--cleaning", type=Path, help="clone of j-szulc/html-cleaning-dataset-merged")
    parser.add_argument("--readability", type=Path, help="clone of mozilla/readability")
    parser.add_argument("--wceb", type=Path, help="clone of tiptopjaw/web-content-extraction-benchmark")
    args = parser.parse_args(argv)
    given = [p for p in (args.cleaning, args.readability, args.wceb) if p]
    if not given:
        parser.error("name at least one clone: --cleaning, --readability or --wceb")
    missing = [str(p) for p in given if not p.is_dir()]
    if missing:
        print(f"not a folder: {', '.join(missing)}", file=sys.stderr)
        return 2
    counts = build(args.out, args.cleaning, args.readability, args.wceb)
    for name, count in counts.items():
        print(f"{name:<16} {count:>5} pages -> {args.out / name}")
    empty = [name for name, count in counts.items() if not count]
    if empty:
        print(f"no pages found for {', '.join(empty)}: is each path a clone of the repository its option names?",
              file=sys.stderr)
    return 1 if empty else 0


if __name__ == "__main__":
    sys.exit(main())
