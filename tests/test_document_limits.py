"""Documents are converted where they cannot hurt the agent (issue 52, items 4 and 6): in a child under a memory and
a time limit. Through main.py with a scripted model: the bombs of the issue (made by tests/fakes/bombs.py) read by
scrape, read_file and --docs cost the child, the agent answers, its observation names the limit, and the agent's
own peak memory (ru_maxrss of its process, not its children's) stays small."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.fakes.bombs import docx_bomb, ods_bomb, slow_pdf
from tests.fakes.cli import GUARD, ROOT, clean_env, run_main
from tests.fakes.loopback import LoopbackServer, Request, Response
from tests.fakes.providers import openai_reply

MODEL = "openai:gpt-4.1-mini"
# main.py run with its own peak resident memory written at exit. RLIMIT_AS of 4 GB is a safety net: a bomb
# converted in the agent again would fail there, not take the machine's memory (it took 35 GB uncapped).
MEASURED = """import atexit, resource, runpy, sys
out, root = sys.argv.pop(1), sys.argv.pop(1)
resource.setrlimit(resource.RLIMIT_AS, (4 << 30, 4 << 30))
def peak():  # VmHWM: this program's own peak (ru_maxrss carries over the peak of pytest, which started it)
    try:
        return next(line.split()[1] for line in open("/proc/self/status") if line.startswith("VmHWM:"))
    except (OSError, StopIteration):
        return str(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
atexit.register(lambda: open(out, "w").write(peak()))
sys.path.insert(0, root)
sys.argv[0] = root + "/main.py"
runpy.run_path(sys.argv[0], run_name="__main__")
"""
AGENT_PEAK_KB = 700 * 1024  # the agent runs in about 150 MB; the bombs took gigabytes in it


def run_measured(cwd: Path, *args: str, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], int]:
    """main.py ARGS, and the peak resident memory of its own process in KB."""
    peak = cwd / "peak-rss.txt"
    proc = subprocess.run([sys.executable, "-c", MEASURED, str(peak), str(ROOT), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=GUARD)
    return proc, int(peak.read_text()) if peak.exists() else -1


def scripted(req: Request, tool: str, arguments: dict[str, str], answer: str, seen: list[str]) -> Response:
    """A model that calls `tool` once, then answers; every prompt it was sent is kept in `seen`."""
    messages = req.json()["messages"]
    seen.append("\n".join(str(m["content"]) for m in messages))
    if not any(m["role"] == "assistant" for m in messages):
        return openai_reply(f"Thought: read it\nAction: {tool}\nAction Input: {json.dumps(arguments)}")
    return openai_reply(f"Final Answer: {answer}")


def test_an_ods_bomb_on_a_web_page_costs_the_child_its_memory_and_the_agent_answers(tmp_path: Path) -> None:
    bomb = ods_bomb()  # 1,000 cells x 1,000 columns x 1,000 rows in about 1 KB: 1.7 GB and more in the agent
    seen: list[str] = []

    def handler(req: Request) -> Response:
        if req.path == "/sheet.ods":
            return Response(200, bomb, content_type="application/vnd.oasis.opendocument.spreadsheet")
        if req.path.startswith("/v1/"):
            return scripted(req, "scrape", {"url": f"{server.url}/sheet.ods"},
                            "The spreadsheet could not be read within the limits.", seen)
        return Response(404, "not found")

    with LoopbackServer(handler) as server:
        env = clean_env(server, AGENT_DOC_MEMORY_MB="128", SCRAPE_ALLOW_PRIVATE_URLS="1", SCRAPE_HOST_GAP="0",
                        AGENT_SEARCH="0")
        proc, peak = run_measured(tmp_path, "ask", "What does the spreadsheet hold?", "--model", MODEL, "-q",
                                  env=env)
    assert proc.returncode == 0, proc.stderr
    assert "could not be read within the limits" in proc.stdout
    assert "Could not convert it: the document needed more than 128 MB to convert (AGENT_DOC_MEMORY_MB)" in seen[-1]
    assert 0 < peak < AGENT_PEAK_KB, f"the agent's own peak was {peak // 1024} MB"


def test_a_docx_bomb_attached_and_read_with_read_file_is_named_by_its_limit(tmp_path: Path) -> None:
    (tmp_path / "table.docx").write_bytes(docx_bomb())  # one cell spanning 100,000,000 grid columns
    seen: list[str] = []

    def model(req: Request) -> Response:
        return scripted(req, "read_file", {"path": "table.docx"}, "The table could not be read.", seen)

    with LoopbackServer(model) as server:
        proc, peak = run_measured(tmp_path, "ask", "What does the table say?", "--file", "table.docx", "--model",
                                  MODEL, "-q", env=clean_env(server, AGENT_DOC_MEMORY_MB="128", AGENT_SEARCH="0"))
    assert proc.returncode == 0, proc.stderr
    assert "The table could not be read." in proc.stdout
    assert ("could not convert table.docx: the document needed more than 128 MB to convert (AGENT_DOC_MEMORY_MB)"
            in seen[-1])
    assert 0 < peak < AGENT_PEAK_KB, f"the agent's own peak was {peak // 1024} MB"


def slow_folder(tmp_path: Path) -> Path:
    """A document folder whose first file is a PDF that takes about a minute to read (20 pages sharing one stream
    of 500 KB), beside notes that answer the question and a PDF that pypdf cannot read (no EOF marker)."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a-slow.pdf").write_bytes(slow_pdf(pages=20, stream_bytes=500_000))
    (docs / "b-broken.pdf").write_bytes(b"%PDF-1.4\n1 0 obj\n<< /Type /Catalog >>\nendobj\n")
    (docs / "c-notes.md").write_text("# Harbour\n\nThe harbour handled 38.6 million tonnes of cargo in 2019.\n")
    return docs


def ask_slow_folder(tmp_path: Path, docs: Path, **env: str) -> tuple[subprocess.CompletedProcess[str], list[str]]:
    """`ask` with --docs on the slow folder, its model searching it once: the run and what the model was sent."""
    seen: list[str] = []

    def model(req: Request) -> Response:
        return scripted(req, "search_docs", {"query": "harbour cargo tonnes"},
                        "The harbour handled 38.6 million tonnes of cargo in 2019 [1].", seen)

    with LoopbackServer(model) as server:
        proc = run_main(tmp_path, "ask", "How much cargo in 2019?", "--model", MODEL, "--docs", str(docs),
                        env=clean_env(server, AGENT_SEARCH="0", **env))
    return proc, seen


def test_a_slow_pdf_in_docs_is_skipped_and_named_while_the_other_files_are_found(tmp_path: Path) -> None:
    docs = slow_folder(tmp_path)
    proc, seen = ask_slow_folder(tmp_path, docs, AGENT_DOC_TIMEOUT="2")
    assert proc.returncode == 0, proc.stderr
    assert "c-notes.md, § Harbour" in seen[-1] and "38.6 million tonnes" in seen[-1]
    assert "still being indexed" not in seen[-1]  # the slow file was skipped at its limit, not left pending
    assert "EOF marker" not in proc.stderr + proc.stdout  # pypdf's own words never reach the terminal
    index = run_main(tmp_path, "docs", "index", str(docs), env=clean_env(AGENT_DOC_TIMEOUT="2"))
    assert index.returncode == 0 and index.stderr == "", index.stderr
    assert "3 files (1 read, 2 unreadable)" in index.stdout and "unchanged 3" in index.stdout
    assert "the document took longer than 2 s to convert (AGENT_DOC_TIMEOUT) (1): a-slow.pdf" in index.stdout
    assert "could not be read (ConversionError) (1): b-broken.pdf" in index.stdout


def test_search_docs_answers_within_its_call_while_a_slow_pdf_converts_and_names_it(tmp_path: Path) -> None:
    docs = slow_folder(tmp_path)  # a PDF that takes about a minute, within its 600 s limit here
    proc, seen = ask_slow_folder(tmp_path, docs, AGENT_DOC_TIMEOUT="600", AGENT_TOOL_TIMEOUT="45")
    assert proc.returncode == 0, proc.stderr
    assert "c-notes.md, § Harbour" in seen[-1] and "38.6 million tonnes" in seen[-1]
    assert "still being indexed: a-slow.pdf is being converted" in seen[-1]
    assert "timed out" not in seen[-1] and "45 s" not in seen[-1]


def test_a_search_never_waits_on_a_slow_conversion_it_names_the_file_and_finds_it_later(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from config import Settings
    from docindex import Unit
    from tools import docsearch

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "notes.md").write_text("# Harbour\n\nThe harbour handled 38.6 million tonnes of cargo in 2019.\n")
    (docs / "report.pdf").write_bytes(b"%PDF-1.4 " + b"x" * 2_000)  # converted by the reader below, slowly
    release = threading.Event()
    converting = threading.Event()

    def slow_reader(limits: object) -> object:
        def read(name: str, data: bytes) -> list[Unit]:
            if name == "report.pdf":
                converting.set()
                release.wait(GUARD)  # a conversion that goes on until the test lets it end
                return [Unit("p. 1", "The cargo of 2020 fell to 31.2 million tonnes.")]
            return [Unit("§ Harbour", data.decode())]
        return read

    monkeypatch.setattr(docsearch, "reader", slow_reader)
    monkeypatch.setattr(docsearch, "SEARCH_WAIT", 0.5)
    tool = docsearch.SearchDocsTool(Settings(docs_dirs=(docs,), runs_dir=tmp_path / "runs"))
    try:
        converting.wait(GUARD)
        first = tool.run(query="harbour cargo tonnes")  # answers while report.pdf converts
        assert [r.url for r in first.read] == ["notes.md, § Harbour"]
        assert "still being indexed: report.pdf is being converted and 1 file(s) are not read yet" in first.text
        release.set()
        monkeypatch.setattr(docsearch, "SEARCH_WAIT", GUARD)  # the indexing ends now: the next search waits for it
        second = tool.run(query="cargo tonnes 2020")
        assert "report.pdf, p. 1" in [r.url for r in second.read] and "still being indexed" not in second.text
    finally:
        release.set()
        tool.close()


def test_a_conversion_abandoned_by_its_call_ends_with_it(tmp_path: Path) -> None:
    from tools.call_deadline import ToolTimeoutError, run_tool
    from tools.documents.confined import DocLimits
    from tools.files import ReadFileTool

    (tmp_path / "slow.pdf").write_bytes(slow_pdf(pages=100, stream_bytes=500_000))  # minutes to read
    tool = ReadFileTool(tmp_path, DocLimits(seconds=600.0))
    before = {t.ident for t in threading.enumerate()}
    with pytest.raises(ToolTimeoutError):
        run_tool(tool, {"path": "slow.pdf"}, 1.0)
    for worker in [t for t in threading.enumerate() if t.name == "tool-read_file" and t.ident not in before]:
        worker.join(GUARD)  # its child is killed at the call's deadline: the thread returns, not in ten minutes
        assert not worker.is_alive()


def test_a_stop_while_scrape_converts_a_download_stops_the_task_and_is_not_called_a_damaged_file(
        tmp_path: Path) -> None:
    from core import cancellation
    from core.errors import StopRequested
    from tools.documents.confined import DocLimits
    from tools.documents.reading import scrape_binary

    stop = threading.Event()
    threading.Timer(1.0, stop.set).start()  # Ctrl-C while the child reads a PDF that takes minutes
    lines: list[str] = []
    with cancellation.scope(stop=stop), pytest.raises(StopRequested):
        scrape_binary("slow.pdf", slow_pdf(pages=100, stream_bytes=500_000), lines, "http://127.0.0.1/slow.pdf",
                      DocLimits(seconds=600.0))
    assert not any("Could not convert" in line for line in lines)
