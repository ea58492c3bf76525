"""Research over the user's own documents (--docs DIR), through main.py as a user runs it: a scripted model
searches a folder with search_docs, cites what it found, and the citation check reads the page it cited."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.fakes.cli import ROOT, clean_env, run_main
from tests.fakes.deep_research import Sub, World, page
from tests.fakes.documents import pages_pdf_bytes
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.processes import cannot_run_as_nobody
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
PAGES = [["Port of Halden annual report", "Prepared by the harbour authority."],
         ["The harbour authority employs 212 people.", "Its board meets four times a year."],
         ["Traffic", "The harbour handled 38.6 million tonnes of cargo in 2019."],
         ["Outlook", "The authority expects growth once the new berth opens."]]
PLANTED = "planted-secret-7f3a"  # in every file that must never be indexed, with the words the model searches


def minutes_docx() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("Board minutes", level=1)
    document.add_paragraph("The board approved a budget of 7.5 million euros for the new quay.")
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


def folder(tmp: Path) -> Path:
    """A document folder with a PDF, a Word file and Markdown notes, and what must never be returned: a .env,
    a file in a dot-folder and a link to a file outside the folder (each holding the searched words)."""
    docs = tmp / "docs"
    (docs / ".private").mkdir(parents=True)
    (docs / "harbour-report.pdf").write_bytes(pages_pdf_bytes(PAGES))
    (docs / "minutes.docx").write_bytes(minutes_docx())
    (docs / "notes.md").write_text("# Notes\n\n## Dredging\n\nDredging will deepen the channel to 16.5 metres.\n")
    bait = f"cargo tonnes quay budget dredging channel {PLANTED} OPENAI_API_KEY=sk-{PLANTED}\n"
    (docs / ".env").write_text(bait)
    (docs / ".private" / "keys.md").write_text(bait)
    (tmp / "outside.md").write_text(bait)
    os.symlink(tmp / "outside.md", docs / "linked.md")
    return docs


def act(query: str) -> str:
    return f'Thought: look in the documents\nAction: search_docs\nAction Input: {json.dumps({"query": query})}'


QUERIES = ["cargo tonnes 2019", "quay budget", "dredging channel", f"{PLANTED} OPENAI_API_KEY secret"]


def answer(transcript: str) -> str:
    """The final answer, citing each fact by the number its observation gave its page (as a model reads them)."""
    def n(place: str) -> str:
        found = re.search(r"\[(\d+)\] " + re.escape(place) + r"\n", transcript)
        assert found, f"no numbered source line for {place}"
        return found.group(1)

    pdf, docx_, md = n("harbour-report.pdf, p. 3"), n("minutes.docx, § Board minutes"), n("notes.md, § Dredging")
    return (f"Final Answer: The harbour handled 38.6 million tonnes of cargo in 2019 [{pdf}]. The board approved a "
            f"budget of 7.5 million euros for the new quay [{docx_}]. Dredging will deepen the channel to 16.5 "
            f"metres [{md}]. In 2019 the harbour handled 41.2 million tonnes of cargo [{pdf}].")


def test_facts_are_cited_to_their_file_and_page_and_a_wrong_figure_is_flagged(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    seen: list[str] = []

    def model(req: Request) -> Response:
        messages = req.json()["messages"]
        transcript = "\n".join(str(m["content"]) for m in messages)
        seen.append(transcript)
        turns = sum(1 for m in messages if m["role"] == "assistant")
        return openai_reply(act(QUERIES[turns]) if turns < len(QUERIES) else answer(transcript))

    (tmp_path / "tasks.txt").write_text("What do the Port of Halden's documents say about cargo and the quay?\n")
    with LoopbackServer(model) as server:
        proc = run_main(tmp_path, "tasks.txt", "--model", MODEL, "--docs", str(docs), "-q",
                        env=clean_env(server, AGENT_SEARCH="0"))
    assert proc.returncode == 0, proc.stderr
    last = seen[-1]
    # each passage is headed by its numbered source line; the fact is on page 3 only
    assert re.search(r"\[\d+\] harbour-report\.pdf, p\. 3\nTraffic\nThe harbour handled 38\.6 million", last)
    assert all(f"harbour-report.pdf, p. {page}" not in last for page in (1, 2, 4))  # no searched word there
    assert f"sk-{PLANTED}" not in last and "outside" not in last and "linked.md" not in last and ".private" not in last
    assert "No passage of the documents holds these words" in last  # the planted words' search found nothing
    record = json.loads((tmp_path / "results.jsonl").read_text())
    urls = [s["url"] for s in record["sources"]]
    assert urls == ["harbour-report.pdf, p. 3", "minutes.docx, § Board minutes", "notes.md, § Dredging"]
    assert [(c["n"], c["verdict"]) for c in record["citations"]] == [
        (1, "supported"), (2, "supported"), (3, "supported"), (1, "contradicted")]  # the page says 38.6, not 41.2
    results = (tmp_path / "results.md").read_text()
    assert "harbour-report.pdf, p. 3" in results and "minutes.docx, § Board minutes" in results
    assert PLANTED not in results
    index_files = list((tmp_path / "runs" / "docindex").glob("docs-*.sqlite"))
    assert len(index_files) == 1 and not any(p.name.endswith(".sqlite") for p in docs.rglob("*"))
    assert PLANTED.encode() not in index_files[0].read_bytes()  # never stored either


def test_docs_index_names_what_changed_between_two_runs_and_what_it_skipped(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    (docs / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    first = run_main(tmp_path, "docs", "index", str(docs))
    assert first.returncode == 0, first.stderr
    assert "3 files, 6 pages or sections" in first.stdout and "new 3, changed 0, removed 0" in first.stdout
    assert "a format no reader reads (1): photo.png" in first.stdout
    assert "a link leading out of the folder (1): linked.md" in first.stdout
    assert ".env" not in first.stdout and ".private" not in first.stdout  # never even listed

    notes = docs / "notes.md"
    notes.write_text("# Notes\n\n## Dredging\n\nDredging will deepen the channel to 17.2 metres by 2027.\n")
    os.utime(notes, (notes.stat().st_atime, notes.stat().st_mtime + 5))
    (docs / "minutes.docx").unlink()
    second = run_main(tmp_path, "docs", "index", str(docs))
    assert second.returncode == 0, second.stderr
    assert "new 0, changed 1, removed 1, unchanged 1" in second.stdout
    assert "changed: notes.md" in second.stdout and "removed: minutes.docx" in second.stdout
    found = run_main(tmp_path, "docs", "search", str(docs), "dredging channel depth")
    assert found.returncode == 0, found.stderr
    assert found.stdout.startswith("1. notes.md, § Dredging\n") and "17.2 metres" in found.stdout
    assert "16.5" not in found.stdout


def test_a_query_cannot_use_fts_syntax_or_reach_outside_the_folder(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    for query in ['NEAR("cargo" "tonnes") OR *', 'cargo" OR "x', "body:cargo ^tonnes -quay", "../outside.md"]:
        proc = run_main(tmp_path, "docs", "search", str(docs), query)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr and PLANTED not in proc.stdout
    proc = run_main(tmp_path, "docs", "search", str(docs), "\x1b]0;owned\x07 cargo")
    assert "\x1b" not in proc.stdout and "harbour-report.pdf, p. 3" in proc.stdout


def test_a_pipe_a_link_to_a_device_and_an_escape_sequence_in_a_name_neither_hang_nor_reach_the_terminal(
        tmp_path: Path) -> None:
    docs = folder(tmp_path)
    os.mkfifo(docs / "pipe.txt")  # opening it would block forever
    os.symlink("/dev/zero", docs / "zero.txt")
    (docs / "\x1b]0;owned\x07 cargo.md").write_text("Cargo ledger: 12 tonnes.\n")
    proc = run_main(tmp_path, "docs", "index", str(docs))
    assert proc.returncode == 0, proc.stderr
    assert "not a regular file (1): pipe.txt" in proc.stdout
    assert "a link leading out of the folder (2): linked.md, zero.txt" in proc.stdout
    assert "\x1b" not in proc.stdout and "4 files" in proc.stdout
    found = run_main(tmp_path, "docs", "search", str(docs), "cargo ledger")
    assert "\x1b" not in found.stdout and "1. \\x1b]0;owned\\x07 cargo.md" in found.stdout


def test_slides_sheets_sections_and_lines_are_what_a_hit_cites(tmp_path: Path) -> None:
    from tests.fakes import documents as fx

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "deck.pptx").write_bytes(fx.pptx_bytes("ZEBRAPPTX"))  # in slide 2's speaker notes
    (docs / "book.xlsx").write_bytes(fx.xlsx_bytes("ZEBRAXLSX"))  # on sheet Notes
    (docs / "page.html").write_text("<html><body><article><h1>Report</h1><p>Intro text here.</p><h2>Findings</h2>"
                                    "<p>The key finding is ZEBRAHTML.</p></article></body></html>")
    (docs / "table.csv").write_text("city,population\nZEBRACSV,1200\nOslo,700000\n")
    (docs / "log.txt").write_text("".join(f"line {i} of the log\n" for i in range(3000)) + "ZEBRATXT\n")
    expected = {"ZEBRAPPTX": "deck.pptx, slide 2", "ZEBRAXLSX": "book.xlsx, sheet Notes",
                "ZEBRAHTML": "page.html, § Findings", "ZEBRACSV": "table.csv", "ZEBRATXT": "log.txt, lines 2720-3001"}
    for word, place in expected.items():
        proc = run_main(tmp_path, "docs", "search", str(docs), word)
        assert proc.stdout.startswith(f"1. {place}\n"), (word, proc.stdout, proc.stderr)


def test_a_missing_docs_folder_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = run_main(tmp_path, "ask", "anything", "--model", MODEL, "--docs", str(tmp_path / "nope"))
    assert proc.returncode == 2
    assert proc.stderr.strip() == f"error: --docs / AGENT_DOCS {tmp_path / 'nope'}: no such folder"


def test_research_runs_offline_over_the_documents_alone(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    plan = ["How much cargo did the harbour handle in 2019?", "How deep will the channel be dredged?"]
    world = World("What do the harbour's documents say about cargo and dredging?", plan, {
        plan[0]: Sub(["docs:cargo tonnes"], "The harbour handled 38.6 million tonnes of cargo in 2019 [1]."),
        plan[1]: Sub(["docs:dredging channel"], "Dredging will deepen the channel to 16.5 metres [1].")}, {},
        writer=lambda prompt: ("## Cargo\n\nThe harbour handled 38.6 million tonnes of cargo in 2019 [1].\n\n"
                               "## Dredging\n\nDredging will deepen the channel to 16.5 metres [2].\n"))
    with LoopbackServer(world) as server:
        world.base = server.url
        proc = run_main(tmp_path, "research", world.question, "-o", "report.md", "--model", MODEL, "--docs",
                        str(docs), env=clean_env(server, AGENT_SEARCH="0", AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    assert "in the user's own documents (searched with search_docs) on its own" in world.prompts["plan"][0]
    assert world.calls == {"plan": 1, "task": 4, "write": 1}
    report = (tmp_path / "report.md").read_text()
    assert "**2 claims: 2 supported, 0 unsupported" in report
    assert "harbour-report.pdf, p. 3" in report and "notes.md, § Dredging" in report
    assert "http" not in report.split("## Sources", 1)[-1]  # documents only: no page of the web


def test_with_web_search_on_a_report_cites_a_page_and_a_document_side_by_side(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    plan = ["How much freight does the Rhine carry?", "How much cargo did the harbour handle in 2019?"]
    world = World("How do Rhine freight and Halden cargo compare?", plan, {
        plan[0]: Sub(["/rhine"], "The Rhine carried 187 million tonnes of freight in 2022 [1]."),
        plan[1]: Sub(["docs:cargo tonnes"], "The harbour handled 38.6 million tonnes of cargo in 2019 [1].")},
        {"/rhine": page("Rhine freight", "The Rhine carried 187 million tonnes of freight in 2022.")},
        writer=lambda prompt: ("## Freight\n\nThe Rhine carried 187 million tonnes of freight in 2022 [1]. "
                               "The harbour handled 38.6 million tonnes of cargo in 2019 [2].\n"))
    with LoopbackServer(world) as server:
        world.base = server.url
        proc = run_main(tmp_path, "research", world.question, "-o", "report.md", "--model", MODEL, "--docs",
                        str(docs), env=clean_env(server, SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0",
                                                 AGENT_MAX_RETRIES="0"))
    assert proc.returncode == 0, proc.stderr
    assert "in the user's own documents (searched with search_docs) and on the web" in world.prompts["plan"][0]
    report = (tmp_path / "report.md").read_text()
    assert "**2 claims: 2 supported, 0 unsupported" in report
    sources = report.split("## Sources", 1)[1]
    assert f"1. [Rhine freight](<{server.url}/rhine>)" in sources and "2. `harbour-report.pdf, p. 3`" in sources


def test_ask_with_docs_answers_from_the_folder_and_lists_the_page(tmp_path: Path) -> None:
    docs = folder(tmp_path)

    def model(req: Request) -> Response:
        messages = req.json()["messages"]
        if sum(1 for m in messages if m["role"] == "assistant") == 0:
            return openai_reply(act("cargo tonnes"))
        return openai_reply("Final Answer: The harbour handled 38.6 million tonnes of cargo in 2019 [1].")

    with LoopbackServer(model) as server:
        proc = run_main(tmp_path, "ask", "How much cargo did the harbour handle in 2019?", "--model", MODEL, "-q",
                        env=clean_env(server, AGENT_DOCS=str(docs), AGENT_SEARCH="0"))
    assert proc.returncode == 0, proc.stderr
    assert "38.6 million tonnes" in proc.stdout and "harbour-report.pdf, p. 3" in proc.stdout
    assert "\n[1] harbour-report.pdf, p. 3\n" in proc.stdout + "\n", proc.stdout  # its place once, not twice


def test_a_large_new_folder_is_indexed_over_several_calls_and_says_so(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    from config import Settings
    from tools import docsearch

    docs = folder(tmp_path)
    settings = Settings(docs_dirs=(docs,), runs_dir=tmp_path / "runs")
    monkeypatch.setattr(docsearch, "SEARCH_WAIT", 0.0)  # the search does not wait for the indexing
    first_tool = docsearch.SearchDocsTool(settings)
    first = first_tool.run(query="cargo tonnes")
    assert "still being indexed" in first.text or "being indexed: search again" in first.text
    first_tool.close()
    monkeypatch.setattr(docsearch, "SEARCH_WAIT", 60.0)
    second = docsearch.SearchDocsTool(settings).run(query="cargo tonnes")
    assert "still being indexed" not in second.text
    assert [r.url for r in second.read] == ["harbour-report.pdf, p. 3"]


def test_two_commands_indexing_one_folder_at_once_both_finish(tmp_path: Path) -> None:
    docs = folder(tmp_path)
    for i in range(60):
        (docs / f"memo-{i:02d}.md").write_text(f"# Memo {i}\n\nThe memo number {i} mentions {i * 7} containers.\n")
    procs = [subprocess.Popen([sys.executable, str(ROOT / "main.py"), "docs", "index", str(docs)], cwd=tmp_path,
                              env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], [err for _, err in outs]
    assert all("63 files, 66 pages or sections" in out for out, _ in outs)
    again = run_main(tmp_path, "docs", "index", str(docs))
    assert "new 0, changed 0, removed 0, unchanged 63" in again.stdout


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="runs the command as nobody: needs root and setpriv")
def test_as_a_normal_user_a_file_it_may_not_read_is_skipped_and_named_never_shown(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="docs-nobody-", dir="/tmp"))  # tmp_path's parents are root's alone
    try:
        os.chmod(base, 0o755)
        docs, runs = base / "docs", base / "runs"
        docs.mkdir()
        runs.mkdir()
        os.chmod(runs, 0o1777)  # writable by nobody, sticky as /tmp: no user may rename another's docindex/
        (docs / "open.md").write_text("# Open\n\nThe cargo ledger shows 12 tonnes.\n")
        (docs / "locked.md").write_text(f"# Locked\n\nThe cargo ledger {PLANTED} shows 99 tonnes.\n")
        os.chmod(docs / "locked.md", 0o600)
        setpriv = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        if why := cannot_run_as_nobody(setpriv, base):
            pytest.skip(why)
        as_nobody = [*setpriv, sys.executable, str(ROOT / "main.py"), "docs"]
        index = subprocess.run([*as_nobody, "index", str(docs), "--runs-dir", str(runs)], cwd=base,
                               env=clean_env(), capture_output=True, text=True, timeout=120)
        assert index.returncode == 0, index.stderr
        assert "could not be read (PermissionError) (1): locked.md" in index.stdout
        found = subprocess.run([*as_nobody, "search", str(docs), "cargo ledger", "--runs-dir", str(runs)], cwd=base,
                               env=clean_env(), capture_output=True, text=True, timeout=120)
        assert found.stdout.startswith("1. open.md, § Open\n") and PLANTED not in found.stdout
    finally:
        shutil.rmtree(base, ignore_errors=True)
