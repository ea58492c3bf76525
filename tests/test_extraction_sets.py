"""benchmarks/extraction_sets.py: tiny clones in the three repositories' layouts become held-out sets."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import extraction_sets


def _write(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode("utf-8") if isinstance(content, str) else content)
    return root


def _load(out: Path, name: str) -> tuple[dict[str, dict[str, str]], dict[str, str]]:
    truth = json.loads((out / name / "ground-truth.json").read_text(encoding="utf-8"))
    pages = {p.name.removesuffix(".html.gz"): gzip.decompress(p.read_bytes()).decode("utf-8")
             for p in (out / name / "html").iterdir()}
    return truth, pages


L3S_GOLD = """<html><body>
<h1><span class="x-nc-sel1">Storm closes the harbour</span></h1>
<div><span class="x-nc-sel0">Home | Sport | Weather</span></div>
<p><span class="x-nc-sel2">Boats stayed in <span class="x-nc-sel2">port all day</span></span>
 <span class="x-nc-sel3">says the mayor</span></p>
<p><span class="x-nc-sel5">Share this story</span></p>
</body></html>"""

CLEANING = {
    "cleaneval-dev/GoldStandard/1.txt": "URL: http://example.org/storm\n<h>Storm news\n<p>The harbour closed &amp; "
                                        "boats stayed in.\n_____\n<l>Item one",
    "cleaneval-dev/input/1.html": '<text id="http://example.org/storm" title="Storm">\n<html><body><p>Storm</p>'
                                  "</body></html>\n</text>\n",
    "cleaneval-dev/GoldStandard/.DS_Store": b"\x00\x01",
    "cleaneval-final/GoldStandard/9.txt": "URL: http://example.org/nopage\n<p>Label without its page.",
    "CleanPortalEval-master/GoldStandard/bbc_01.txt": "<p>Portal story text.",
    "CleanPortalEval-master/input/bbc_01.html": '<html><head><meta charset="windows-1252"></head><body>'
                                                "caf\xe9 story</body></html>".encode("cp1252"),
    "dragnet_data/GoldStandard/5.txt": "Rain fell all night.\n\nRoads flooded.\n!@#$%^&*() COMMENTS\nGreat post!",
    "dragnet_data/input/5.html": "<html><body><p>Rain fell all night.</p></body></html>",
    "page-signal-master/GoldStandard/ab-12.txt": L3S_GOLD,
    "page-signal-master/input/ab-12.html": "<html><body><h1>Storm closes the harbour</h1></body></html>",
}


def test_cleaning_sets_follow_each_set_rules(tmp_path: Path) -> None:
    clone = _write(tmp_path / "cleaning", CLEANING)
    assert extraction_sets.main(["--out", str(tmp_path / "out"), "--cleaning", str(clone)]) == 0
    truth, pages = _load(tmp_path / "out", "cleaneval")
    assert truth == {"dev-1": {"articleBody": "Storm news\n\nThe harbour closed & boats stayed in.\n\nItem one",
                               "url": "http://example.org/storm"}}  # URL line, <hr> line and missing page dropped
    assert pages["dev-1"] == "<html><body><p>Storm</p></body></html>"  # the <text id=URL> wrapper removed
    truth, pages = _load(tmp_path / "out", "cleanportaleval")
    assert truth == {"master-bbc_01": {"articleBody": "Portal story text.", "url": ""}}
    assert "caf\u00e9 story" in pages["master-bbc_01"]  # a windows-1252 page is stored as UTF-8
    truth, _ = _load(tmp_path / "out", "dragnet")
    assert truth["dragnet_data-5"]["articleBody"] == "Rain fell all night.\n\nRoads flooded."
    truth, _ = _load(tmp_path / "out", "l3s-gn1")
    assert truth["page-ab-12"]["articleBody"] == "Storm closes the harbour port all day\nsays the mayor"  # leaves only
    assert "j-szulc/html-cleaning-dataset-merged" in (tmp_path / "out" / "dragnet" / "SOURCE.txt").read_text()


READABILITY = {
    "test/test-pages/plain/source.html": "<html><body><nav>Menu</nav><p>One line</p></body></html>",
    "test/test-pages/plain/expected.html": '<div id="readability-page-1" class="page"><p>One<br>line</p>'
                                           "<figure><img src='a.png'><figcaption>A caption</figcaption></figure>"
                                           "<table><tr><td>cell a</td><td>cell b</td></tr></table></div>",
    "test/test-pages/unlabelled/source.html": "<html><body><p>No expected output</p></body></html>",
}


def test_readability_label_is_the_block_text_of_expected_html(tmp_path: Path) -> None:
    clone = _write(tmp_path / "readability", READABILITY)
    assert extraction_sets.main(["--out", str(tmp_path / "out"), "--readability", str(clone)]) == 0
    truth, pages = _load(tmp_path / "out", "readability")
    assert truth == {"plain": {"articleBody": "One\nline\nA caption\ncell acell b\n\n",
                               "url": "http://fakehost/test/page.html"}}
    assert pages["plain"] == READABILITY["test/test-pages/plain/source.html"]


def _wceb_record(file_id: str, kind: str, text: str) -> str:
    return json.dumps({"url": f"https://example.org/{file_id}", "file_id": file_id,
                       "_internal": {"page_type": {"primary": kind}}, "ground_truth": {"main_content": text}})


def test_wceb_keeps_article_pages_only(tmp_path: Path) -> None:
    clone = _write(tmp_path / "wceb", {
        "benchmark/ground-truth/0001.json": _wceb_record("0001", "article", "The article body."),
        "benchmark/ground-truth/0002.json": _wceb_record("0002", "forum", "A forum thread."),
        "release/html/0001.html.gz": gzip.compress(b"<html><body>The article body.</body></html>"),
        "release/html/0002.html.gz": gzip.compress(b"<html><body>A forum thread.</body></html>"),
    })
    assert extraction_sets.main(["--out", str(tmp_path / "out"), "--wceb", str(clone)]) == 0
    truth, pages = _load(tmp_path / "out", "modern-2025")
    assert truth == {"0001": {"articleBody": "The article body.", "url": "https://example.org/0001"}}
    assert pages == {"0001": "<html><body>The article body.</body></html>"}


def test_wrong_clone_writes_no_set_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    clone = _write(tmp_path / "readability", READABILITY)
    assert extraction_sets.main(["--out", str(tmp_path / "out"), "--cleaning", str(clone)]) == 1
    assert not list((tmp_path / "out").glob("*/ground-truth.json"))
    assert "no pages found for cleaneval" in capsys.readouterr().err


@pytest.mark.skipif(shutil.which("git") is None, reason="needs the git binary")
def test_bare_git_clone_gives_the_same_set_and_names_the_commit(tmp_path: Path) -> None:
    work = _write(tmp_path / "work", READABILITY)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "-c", "init.defaultBranch=main"]
    subprocess.run([*git, "init", "-q", str(work)], check=True)
    subprocess.run([*git, "-C", str(work), "add", "."], check=True)
    subprocess.run([*git, "-C", str(work), "commit", "-q", "-m", "pages"], check=True)
    commit = subprocess.run(["git", "-C", str(work), "rev-parse", "HEAD"], capture_output=True, text=True,
                            check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "--bare", str(work), str(tmp_path / "bare.git")], check=True)
    assert extraction_sets.main(["--out", str(tmp_path / "from-tree"), "--readability", str(work)]) == 0
    bare = tmp_path / "bare.git"
    assert extraction_sets.main(["--out", str(tmp_path / "from-bare"), "--readability", str(bare)]) == 0
    assert _load(tmp_path / "from-bare", "readability") == _load(tmp_path / "from-tree", "readability")
    assert commit in (tmp_path / "from-bare" / "readability" / "SOURCE.txt").read_text()
